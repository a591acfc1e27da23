// SCUDA_STATS=1 (or SCUDA_STATS_JSON=FILE): what the program asked of the
// driver and what that cost on the wire, printed (or written) at exit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace scuda::client::stats {

bool enabled();
// An entry point was called.
void count_call(const char* name);
// A frame for `op` left the client.
void count_send(uint32_t op, size_t bytes, bool one_way);
// The reply to `op` arrived after `waited_ns` of waiting.
void count_reply(uint32_t op, size_t bytes, uint64_t waited_ns);

}  // namespace scuda::client::stats
