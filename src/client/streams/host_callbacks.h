// Host callbacks (cuLaunchHostFunc, cuStreamAddCallback) run on the client:
// the server's stream reaches a stand-in host function, which tells the
// client over the callback channel (callback_channel.h) and waits until the
// callback has run (host_callbacks.cc).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace scuda::client {

// On the callback channel's thread: runs callback `id`, once the replies
// that its stream's earlier copies owe the program are in place. False when
// no callback `id` was queued.
bool run_host_callback(uint64_t id);

// Blocks until every stream callback queued before the call has run. An
// async copy from page-locked memory reads its source in stream order
// natively, so a callback queued ahead of it (XLA fills its staging buffers
// so) must have written the bytes before the client reads them.
void wait_for_queued_callbacks();

// A graph host node's callback, kept under *id for as long as the process
// lives, since every launch of the graph runs it: the node names the id,
// and the server's stand-in reaches it over the callback channel. `once`:
// a user object's destructor, dropped once it has run.
CUresult queue_graph_callback(CUhostFn fn, void* data, uint64_t* id, bool once = false);
// Drops callback `id`, which nothing on the server names after all.
void forget_callback(uint64_t id);

// The host function and data that callback `id` runs, for a node the server
// describes by the id; false when `id` names no host function kept here
// (a stream callback, or one that ran and was not captured).
bool host_function_of(uint64_t id, CUhostFn* fn, void** data);

}  // namespace scuda::client
