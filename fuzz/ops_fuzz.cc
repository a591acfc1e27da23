// Every server-side op decoder over untrusted requests: the input is a
// series of requests (an op picked from every op the session handles, frame
// flags and a payload), served one after the other by a real Session on a
// socketpair. The driver is a table of stubs that never touch memory
// (stub_driver.h), so a crash is the session's own.
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/socket.h"
#include "protocol/frame.h"
#include "protocol/ops.h"
#include "server/nvml/nvml_session.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"
#include "stub_driver.h"

namespace {

using namespace scuda;

// Ops left out: their handlers open local sockets served by threads that
// outlive one input (join points for the callback channel, lanes and copies
// from other servers, IPC exports), reach other processes' sockets by a pid
// in the payload, dial the network address in the payload (peer-send), or
// wait seconds for another server's session (peer-receive).
bool left_out(uint32_t op) {
  switch (op) {
    case protocol::kOpCallbackChannel:
    case protocol::kOpLanes:
    case protocol::kOpPeerInbox:
    case protocol::kOpPeerSend:
    case protocol::kOpPeerReceive:
    case protocol::kOpIpcExportMemory:
    case protocol::kOpIpcOpenMemory:
    case protocol::kOpShareableExport:
    case protocol::kOpShareableImport: return true;
    default: return false;
  }
}

const std::vector<uint32_t>& fuzzed_ops() {
  static const std::vector<uint32_t> ops = [] {
    std::vector<uint32_t> all;
    for (uint32_t op : server::handled_ops())
      if (!left_out(op)) all.push_back(op);
    return all;
  }();
  return ops;
}

// A record's op: itself where the session handles it (seeds keep real op
// numbers), else one picked from those it handles.
uint32_t op_of(uint16_t wanted) {
  const std::vector<uint32_t>& ops = fuzzed_ops();
  return std::binary_search(ops.begin(), ops.end(), wanted) ? wanted : ops[wanted % ops.size()];
}

// Frames from the input: up to kMaxRequests records of (u16 op, u8 flags,
// u16 length, payload), the last payload cut short where the input ends.
constexpr int kMaxRequests = 64;

std::vector<uint8_t> frames_of(const uint8_t* data, size_t size) {
  std::vector<uint8_t> stream;
  uint64_t id = 1;
  while (size >= 5 && id <= kMaxRequests) {
    protocol::FrameHeader h;
    h.op = op_of(static_cast<uint16_t>(data[0] | data[1] << 8));
    h.flags = data[2] & (protocol::kOneWay | protocol::kSynchronizing);
    const size_t length = std::min<size_t>(data[3] | data[4] << 8, size - 5);
    h.length = static_cast<uint32_t>(length);
    h.request_id = id++;
    data += 5;
    size -= 5;
    const size_t at = stream.size();
    stream.resize(at + protocol::kHeaderSize);
    protocol::encode_header(h, stream.data() + at);
    stream.insert(stream.end(), data, data + length);
    data += length;
    size -= length;
  }
  return stream;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  signal(SIGPIPE, SIG_IGN);
  spdlog::set_level(spdlog::level::off);
  server::set_nvml_path("/nonexistent/libnvidia-ml.so.1");  // NVML handlers decode, then fail
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The requests go into the socket before the session starts, so they
  // must fit its buffer (64 KiB of payloads, 64 headers).
  if (size < 1 || size > 65536) return 0;
  const DriverTable driver =
      fuzz::stub_driver(data[0] & 1 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE);
  const std::vector<uint8_t> stream = frames_of(data + 1, size - 1);
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0) return 0;
  Socket client(fds[0]);
  if (!client.write_all(stream.data(), stream.size())) return 0;
  shutdown(client.fd(), SHUT_WR);
  // The replies are read and dropped, so that a large one never blocks.
  std::thread drain([&client] {
    uint8_t buf[65536];
    while (read(client.fd(), buf, sizeof buf) > 0) {
    }
  });
  {
    server::Session session(Socket(fds[1]), {});
    session.serve_without_handshake(driver);
  }
  drain.join();
  return 0;
}
