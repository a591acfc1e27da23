#include "protocol/frame.h"

#include <fmt/format.h>

#include "protocol/codec.h"

namespace scuda::protocol {

void encode_header(const FrameHeader& h, uint8_t out[kHeaderSize]) {
  Writer w;
  w.u32(h.magic);
  w.put<uint16_t>(h.version);
  w.put<uint16_t>(h.flags);
  w.u32(h.op);
  w.u32(h.length);
  w.u64(h.request_id);
  std::memcpy(out, w.data().data(), kHeaderSize);
}

bool decode_header(const uint8_t in[kHeaderSize], FrameHeader* h,
                   std::string* error) {
  Reader r(in, kHeaderSize);
  h->magic = r.u32();
  h->version = r.get<uint16_t>();
  h->flags = r.get<uint16_t>();
  h->op = r.u32();
  h->length = r.u32();
  h->request_id = r.u64();
  if (h->magic != kMagic) {
    *error = fmt::format("bad frame magic {:#x}: the peer does not speak the scuda protocol", h->magic);
    return false;
  }
  if (h->version != kProtocolVersion) {
    *error = fmt::format("protocol version {} from the peer, this side speaks {}: run the same scuda release on both machines",
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
