// Compressed copy pieces and a 3D copy's request from untrusted bytes:
// the first byte picks the destination's size, the rest is the payload.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "protocol/codec.h"
#include "protocol/compressed_pieces.h"
#include "protocol/copy_desc.h"
#include "protocol/op_layouts.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const size_t dst_size = static_cast<size_t>(data[0]) * 97;
  std::vector<uint8_t> dst(dst_size);
  {
    scuda::protocol::Reader r(data + 1, size - 1);
    std::string error;
    scuda::protocol::read_pieces(r, dst.data(), dst.size(), &error);
  }
  {
    scuda::protocol::Reader r(data + 1, size - 1);
    scuda::protocol::op::Memcpy3D::Request copy;
    if (scuda::protocol::read(r, &copy)) scuda::protocol::from_desc(copy.desc);
  }
  return 0;
}
