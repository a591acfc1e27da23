// Reading and writing whole frames on a socket.
#pragma once

#include <cstdint>
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

// Appends the frame, encoded, to `out`; false if the payload is too large.
bool append_frame(std::vector<uint8_t>& out, FrameHeader h, const void* head, size_t head_size,
                  const void* tail = nullptr, size_t tail_size = 0);

enum class ReadStatus { kOk, kClosed, kBad };

// Reads one frame. kClosed: the peer went away (cleanly or not) before a
// whole frame arrived; kBad: the header is invalid and *error says why.
ReadStatus read_frame(Socket& s, Frame* f, std::string* error);

}  // namespace scuda::protocol
