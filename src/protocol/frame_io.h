// Reading and writing whole frames on a socket.
#pragma once

#include <string>

#include "common/socket.h"
#include "protocol/frame.h"

namespace scuda::protocol {

// Sends one frame whose payload is `head` followed by `tail` (either may be
// empty); sets the header's length. False if the payload is too large or the
// connection failed.
bool write_frame(Socket& s, FrameHeader h, const void* head, size_t head_size,
                 const void* tail = nullptr, size_t tail_size = 0);

// Sends an ERROR frame: `message` tells the peer why its connection ends.
bool write_error(Socket& s, uint64_t request_id, const std::string& message);

enum class ReadStatus { kOk, kClosed, kBad };

// Reads one frame. kClosed: the peer went away (cleanly or not) before a
// whole frame arrived; kBad: the header is invalid and *error says why.
ReadStatus read_frame(Socket& s, Frame* f, std::string* error);

}  // namespace scuda::protocol
