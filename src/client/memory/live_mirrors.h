// Live mirrors (docs/managed-memory.md, "Live mirrors"): mapped host memory
// that a kernel and a host thread use at once, as NCCL's proxies do, kept
// in step with the session's mirror while kernels run, word by word
// (common/live_words.h), by a thread per server that trades turns with the
// session over a channel of its own.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstddef>

namespace scuda::client::live_mirrors {

// Whether a new mapped block (cuMemHostAlloc with DEVICEMAP) is to be live:
// SCUDA_LIVE_HOST_MEMORY=all says every one, =off none, and by default
// (=nccl) those that NCCL's own threads (its proxies) allocate: NCCL is the
// only program known to poll host memory from its kernels.
bool wanted();

// Which blocks are live: SCUDA_LIVE_HOST_MEMORY's values.
enum Mode : int { kOff = 0, kNccl = 1, kAll = 2 };
std::atomic<int>& mode();

// Mirrors the program's [p, p + size) live in the current context's
// session, at the same address; `p` and `size` are whole words. An `eager`
// block stands in for managed memory where the server has none: the host's
// writes to it reach the device ahead of device work (before_device_work).
CUresult add(void* p, size_t size, bool eager = false);

// Stops keeping the block at `p` in step and drops its mirror; false when
// `p` is not a live block's start.
bool remove(void* p);

// After a synchronizing call: returns once a whole turn that began after it
// came back, so that what the device wrote before it is here.
void after_sync();

// Before a request that starts device work: when an eager block of its
// server changed, returns once a whole turn carried the change.
void before_device_work();

}  // namespace scuda::client::live_mirrors
