// The callback channel (docs/protocol.md, "Host callbacks"): a second
// connection to the session, opened at the first host callback, on which
// the server says when a stream has reached one. A thread of its own runs
// the callback and answers "done", while the stream waits; it never takes
// the main connection's lock, so a program may block on it meanwhile.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string>

#include "protocol/codec.h"

namespace scuda::client {

// Opens the channel the first time; later calls return the first result,
// or an error once the channel is lost. A failure is logged once, with why.
CUresult open_callback_channel();

// Runs what a frame of the channel with op `op` names for callback `id`,
// the rest of its payload in `r`; returns why not when it cannot.
std::string run_reached(uint32_t op, uint64_t id, protocol::Reader& r);

}  // namespace scuda::client
