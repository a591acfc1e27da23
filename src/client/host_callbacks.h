// Host callbacks (cuLaunchHostFunc, cuStreamAddCallback) run on the client:
// the server's stream reaches a stand-in host function, which notes the
// callback's id; the session relays the ids ahead of its next synchronizing
// reply, and the client runs the callbacks, in order, once the connection
// is free again (host_callbacks.cc).
#pragma once

#include <cstdint>

namespace scuda::client {

// With the connection's lock held: callback `id` was reached by its stream.
void callback_reached(uint64_t id);
// Without the lock: runs the callbacks reached so far, in order.
void run_reached_callbacks();

}  // namespace scuda::client
