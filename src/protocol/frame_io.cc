#include "protocol/frame_io.h"

namespace scuda::protocol {

bool write_frame(Socket& s, FrameHeader h, const void* head, size_t head_size,
                 const void* tail, size_t tail_size) {
  if (head_size + tail_size > kMaxPayload) return false;
  h.length = static_cast<uint32_t>(head_size + tail_size);
  uint8_t header[kHeaderSize];
  encode_header(h, header);
  iovec iov[3] = {{header, kHeaderSize},
                  {const_cast<void*>(head), head_size},
                  {const_cast<void*>(tail), tail_size}};
  return s.writev_all(iov, tail_size ? 3 : 2);
}

bool write_error(Socket& s, uint64_t request_id, const std::string& message) {
  FrameHeader h;
  h.flags = kReply | kError;
  h.request_id = request_id;
  return write_frame(s, h, message.data(), message.size());
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
