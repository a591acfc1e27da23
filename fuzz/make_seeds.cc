// Writes each harness's seed inputs (corpus/NAME/seed-N) from frames and
// payloads as the real client and server encode them.
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "common/compression.h"
#include "protocol/codec.h"
#include "protocol/frame.h"
#include "protocol/handshake.h"
#include "protocol/ipc_handle.h"
#include "protocol/ops.h"

namespace {

void save(const std::string& dir, int n, const std::vector<uint8_t>& bytes) {
  const std::string path = dir + "/seed-" + std::to_string(n);
  if (FILE* f = std::fopen(path.c_str(), "wb")) {
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
  }
}

scuda::protocol::Hello hello() {
  scuda::protocol::Hello h;
  h.api_hash = scuda::protocol::kApiHash;
  h.cuda_version = 13000;
  h.token = "token";
  h.program = "seed";
  h.images.push_back({});
  return h;
}

std::vector<uint8_t> framed(uint32_t op, uint16_t flags, const std::vector<uint8_t>& payload) {
  scuda::protocol::FrameHeader h;
  h.op = op;
  h.flags = flags;
  h.length = static_cast<uint32_t>(payload.size());
  h.request_id = 1;
  std::vector<uint8_t> out(scuda::protocol::kHeaderSize);
  scuda::protocol::encode_header(h, out.data());
  out.insert(out.end(), payload.begin(), payload.end());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string root = argc > 1 ? argv[1] : "fuzz/corpus";
  scuda::protocol::Writer hw;
  scuda::protocol::encode(hello(), hw);
  save(root + "/handshake", 0, hw.data());
  scuda::protocol::Welcome welcome;
  welcome.driver_version = 13000;
  welcome.session_pid = 42;
  welcome.devices.resize(1);
  welcome.images_kept = {1};
  scuda::protocol::Writer ww;
  scuda::protocol::encode(welcome, ww);
  save(root + "/handshake", 1, ww.data());

  std::vector<uint8_t> stream = framed(scuda::protocol::kOpHello, 0, hw.data());
  const std::vector<uint8_t> output = framed(0, scuda::protocol::kOutput, {'h', 'i', '\n'});
  stream.insert(stream.end(), output.begin(), output.end());
  save(root + "/frames", 0, stream);

  // 97 raw bytes, then the same compressed.
  std::vector<uint8_t> raw(97, 7);
  scuda::protocol::Writer pw;
  pw.u8(1);
  pw.u32(97);
  pw.u32(0);
  for (uint8_t b : raw) pw.u8(b);
  save(root + "/pieces", 0, pw.data());
  std::vector<uint8_t> block(scuda::compression::bound(raw.size()));
  const size_t n = scuda::compression::compress(raw.data(), raw.size(), block.data());
  scuda::protocol::Writer cw;
  cw.u8(1);
  cw.u32(97);
  cw.u32(static_cast<uint32_t>(n));
  for (size_t i = 0; i < n; ++i) cw.u8(block[i]);
  save(root + "/pieces", 1, cw.data());

  scuda::protocol::IpcHandle handle;
  handle.ref.pid = 1234;
  handle.ref.id = 5;
  handle.size = 1 << 20;
  std::vector<uint8_t> bytes(scuda::protocol::kIpcHandleBytes);
  scuda::protocol::encode_ipc_handle(handle, bytes.data());
  save(root + "/ipc_handle", 0, bytes);
  return 0;
}
