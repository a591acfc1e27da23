#include "protocol/frame.h"

#include <fmt/format.h>

#include "protocol/codec.h"

namespace scuda::protocol {

// Field by field into the caller's bytes: this runs for every frame sent.
void encode_header(const FrameHeader& h, uint8_t out[kHeaderSize]) {
  std::memcpy(out, &h.magic, 4);
  std::memcpy(out + 4, &h.version, 2);
  std::memcpy(out + 6, &h.flags, 2);
  std::memcpy(out + 8, &h.op, 4);
  std::memcpy(out + 12, &h.length, 4);
  std::memcpy(out + 16, &h.request_id, 8);
}

bool decode_header(const uint8_t in[kHeaderSize], FrameHeader* h, std::string* error) {
  Reader r(in, kHeaderSize);
  h->magic = r.u32();
  h->version = r.get<uint16_t>();
  h->flags = r.get<uint16_t>();
  h->op = r.u32();
  h->length = r.u32();
  h->request_id = r.u64();
  if (h->magic != kMagic) {
    *error =
        fmt::format("bad frame magic {:#x}: the peer does not speak the scuda protocol", h->magic);
    return false;
  }
  if (h->version != kProtocolVersion) {
    *error = fmt::format(
        "protocol version {} from the peer, this side speaks {}: run the same scuda release on "
        "both machines",
        h->version, kProtocolVersion);
    return false;
  }
  if (h->length > kMaxPayload) {
    *error = fmt::format("frame of {} bytes exceeds the maximum of {}", h->length, kMaxPayload);
    return false;
  }
  return true;
}

}  // namespace scuda::protocol
