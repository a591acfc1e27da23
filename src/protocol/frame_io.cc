#include "protocol/frame_io.h"

#include <cstring>

namespace scuda::protocol {

bool write_frame(Socket& s, FrameHeader h, const void* head, size_t head_size,
                 const void* tail, size_t tail_size, std::span<const uint8_t> queued) {
  if (head_size + tail_size > kMaxPayload) return false;
  h.length = static_cast<uint32_t>(head_size + tail_size);
  uint8_t header[kHeaderSize];
  encode_header(h, header);
  iovec iov[4] = {{const_cast<uint8_t*>(queued.data()), queued.size()},
                  {header, kHeaderSize},
                  {const_cast<void*>(head), head_size},
                  {const_cast<void*>(tail), tail_size}};
  const int first = queued.empty() ? 1 : 0;
  return s.writev_all(iov + first, (tail_size ? 4 : 3) - first);
}

bool append_frame(std::vector<uint8_t>& out, FrameHeader h, const void* head, size_t head_size,
                  const void* tail, size_t tail_size) {
  if (head_size + tail_size > kMaxPayload) return false;
  h.length = static_cast<uint32_t>(head_size + tail_size);
  const size_t at = out.size();
  out.resize(at + kHeaderSize + head_size + tail_size);
  uint8_t* p = out.data() + at;
  encode_header(h, p);
  if (head_size) std::memcpy(p + kHeaderSize, head, head_size);
  if (tail_size) std::memcpy(p + kHeaderSize + head_size, tail, tail_size);
  return true;
}

ReadStatus read_frame(Socket& s, Frame* f, std::string* error) {
  uint8_t header[kHeaderSize];
  if (!s.read_exact(header, kHeaderSize)) return ReadStatus::kClosed;
  if (!decode_header(header, &f->header, error)) return ReadStatus::kBad;
  f->payload.resize(f->header.length);
  if (!s.read_exact(f->payload.data(), f->payload.size())) return ReadStatus::kClosed;
  return ReadStatus::kOk;
}

}  // namespace scuda::protocol
