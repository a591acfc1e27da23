// Reading and writing whole frames on a socket.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/socket.h"
#include "protocol/frame.h"

namespace scuda::protocol {

// Sends `queued` (whole frames already encoded, or nothing) and then one
// frame whose payload is `head` followed by `tail` (either may be empty), in
// one system call; sets the header's length. False if the payload is too
// large or the connection failed.
bool write_frame(Socket& s, FrameHeader h, const void* head, size_t head_size,
                 const void* tail = nullptr, size_t tail_size = 0,
                 std::span<const uint8_t> queued = {});

// As write_frame, but hands the payload to the socket `slice` bytes at a
// time and calls sent(n) after each slice of n bytes, so that the caller can
// tell how a long write on a slow link is going.
bool write_frame_in_slices(Socket& s, FrameHeader h, const void* head, size_t head_size,
                           const void* tail, size_t tail_size, std::span<const uint8_t> queued,
                           size_t slice, const std::function<void(size_t)>& sent);

// A join's route: the one frame a server reads in the clear to hand the
// connection to the session whose join point `route` names (docs/protocol.md,
// "TLS"). False if the connection failed.
bool write_join_route(Socket& s, const std::string& route);

// Appends the frame, encoded, to `out`; false if the payload is too large.
bool append_frame(std::vector<uint8_t>& out, FrameHeader h, const void* head, size_t head_size,
                  const void* tail = nullptr, size_t tail_size = 0);

// Sends an ERROR frame: `message` tells the peer why its connection ends,
// and `kind` whether it may try again.
bool write_error(Socket& s, uint64_t request_id, const std::string& message,
                 ErrorKind kind = kErrorFatal);

enum class ReadStatus { kOk, kClosed, kBad };

// Reads one frame, unbuffered: not a byte past it (for a handshake, before
// the socket goes to a FrameReader, and for the callback channel).
ReadStatus read_frame(Socket& s, Frame* f, std::string* error);

// Reads frames from a socket through a buffer, so that a small frame (or
// several sent together) costs one system call, not one per field; a bulk
// payload goes straight from the socket to its destination.
class FrameReader {
 public:
  explicit FrameReader(Socket& s);

  // Reads one frame. kClosed: the peer went away (cleanly or not) before a
  // whole frame arrived; kBad: the header is invalid and *error says why.
  ReadStatus frame(Frame* f, std::string* error);
  // Reads only the header; the payload is then read with read() and skip().
  // Either may spin (Socket::read_some) for `spin` before waiting for the
  // peer.
  ReadStatus header(FrameHeader* h, std::string* error, std::chrono::microseconds spin = {});
  // False if the peer went away first.
  bool read(void* dst, size_t size, std::chrono::microseconds spin = {});
  bool skip(size_t size);

 private:
  // Reads straight into the destination rather than through the buffer.
  static constexpr size_t kBulk = 16u << 10;
  static constexpr size_t kCapacity = 64u << 10;

  Socket& socket_;
  std::unique_ptr<uint8_t[]> buf_;
  size_t begin_ = 0;  // buffered bytes not yet read: [begin_, end_)
  size_t end_ = 0;
};

}  // namespace scuda::protocol
