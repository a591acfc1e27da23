#include "protocol/frame_io.h"

#include <algorithm>
#include <cstring>

#include "protocol/codec.h"
#include "protocol/ops.h"

namespace scuda::protocol {

bool write_join_route(Socket& s, const std::string& route) {
  Writer w;
  w.str(route);
  FrameHeader h;
  h.op = kOpJoinRoute;
  return write_frame(s, h, w.data().data(), w.size());
}

namespace {

// The frames queued ahead, then `h`'s header (encoded into `header`) for a
// payload of `payload` bytes, as the first iovecs of a write; how many of
// them there are (1 or 2).
int frame_prefix(FrameHeader h, size_t payload, std::span<const uint8_t> queued,
                 uint8_t (&header)[kHeaderSize], iovec* iov) {
  h.length = static_cast<uint32_t>(payload);
  encode_header(h, header);
  int n = 0;
  if (!queued.empty()) iov[n++] = {const_cast<uint8_t*>(queued.data()), queued.size()};
  iov[n++] = {header, kHeaderSize};
  return n;
}

}  // namespace

bool write_frame(Socket& s, FrameHeader h, const void* head, size_t head_size, const void* tail,
                 size_t tail_size, std::span<const uint8_t> queued) {
  if (head_size + tail_size > kMaxPayload) return false;
  uint8_t header[kHeaderSize];
  iovec iov[4];
  int n = frame_prefix(h, head_size + tail_size, queued, header, iov);
  iov[n++] = {const_cast<void*>(head), head_size};
  if (tail_size) iov[n++] = {const_cast<void*>(tail), tail_size};
  return s.writev_all(iov, n);
}

bool write_frame_in_slices(Socket& s, FrameHeader h, const void* head, size_t head_size,
                           const void* tail, size_t tail_size, std::span<const uint8_t> queued,
                           size_t slice, const std::function<void(size_t)>& sent) {
  if (head_size + tail_size > kMaxPayload || slice == 0) return false;
  uint8_t header[kHeaderSize];
  iovec iov[2];
  if (!s.writev_all(iov, frame_prefix(h, head_size + tail_size, queued, header, iov))) return false;
  for (auto [data, size] : {std::pair{head, head_size}, std::pair{tail, tail_size}}) {
    const auto* p = static_cast<const uint8_t*>(data);
    for (size_t at = 0; at < size; at += slice) {
      const size_t n = std::min(slice, size - at);
      if (!s.write_all(p + at, n)) return false;
      sent(n);
    }
  }
  return true;
}

bool write_error(Socket& s, uint64_t request_id, const std::string& message, ErrorKind kind) {
  FrameHeader h;
  h.flags = kReply | kError;
  h.op = kind;
  h.request_id = request_id;
  return write_frame(s, h, message.data(), message.size());
}

ReadStatus read_frame(Socket& s, Frame* f, std::string* error) {
  uint8_t header[kHeaderSize];
  if (!s.read_exact(header, kHeaderSize)) return ReadStatus::kClosed;
  if (!decode_header(header, &f->header, error)) return ReadStatus::kBad;
  f->payload.resize(f->header.length);
  return s.read_exact(f->payload.data(), f->payload.size()) ? ReadStatus::kOk : ReadStatus::kClosed;
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

FrameReader::FrameReader(Socket& s) : socket_(s), buf_(new uint8_t[kCapacity]) {}

ReadStatus FrameReader::frame(Frame* f, std::string* error) {
  if (ReadStatus st = header(&f->header, error); st != ReadStatus::kOk) return st;
  f->payload.resize(f->header.length);
  return read(f->payload.data(), f->payload.size()) ? ReadStatus::kOk : ReadStatus::kClosed;
}

ReadStatus FrameReader::header(FrameHeader* h, std::string* error, std::chrono::microseconds spin) {
  uint8_t bytes[kHeaderSize];
  if (!read(bytes, kHeaderSize, spin)) return ReadStatus::kClosed;
  return decode_header(bytes, h, error) ? ReadStatus::kOk : ReadStatus::kBad;
}

bool FrameReader::read(void* dst, size_t size, std::chrono::microseconds spin) {
  auto* out = static_cast<uint8_t*>(dst);
  const size_t buffered = std::min(size, end_ - begin_);
  if (buffered) std::memcpy(out, buf_.get() + begin_, buffered);
  begin_ += buffered;
  out += buffered;
  size -= buffered;
  if (size == 0) return true;
  if (size >= kBulk) return socket_.read_exact(out, size);
  begin_ = end_ = 0;
  while (end_ < size) {
    const ssize_t n = socket_.read_some(buf_.get() + end_, kCapacity - end_, spin);
    if (n <= 0) return false;
    end_ += static_cast<size_t>(n);
  }
  std::memcpy(out, buf_.get(), size);
  begin_ = size;
  return true;
}

bool FrameReader::skip(size_t size) {
  uint8_t scrap[4096];
  for (size_t n; size > 0; size -= n) {
    n = std::min(size, sizeof scrap);
    if (!read(scrap, n)) return false;
  }
  return true;
}

}  // namespace scuda::protocol
