// Mapping device memory at an address the client chose (va_ops.cc), shared
// by the ops that create that memory and those that import it (ipc_ops.cc).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace scuda::server {

class Session;

// The properties of the memory the session creates for the client's
// allocations on `dev`: device memory, exportable as a POSIX descriptor
// where the device can export (IPC needs it).
CUmemAllocationProp placed_memory(const Session& s, CUdevice dev);

// Maps `memory` ([0, size) of it) at `address`, read/write for device `dev`
// (the current context's) and the peers that can reach it, and records the
// mapping; the mapping then holds the memory. Checks the address against
// the session's reservations for `dev` first.
CUresult map_at(Session& s, CUdevice dev, uint64_t address, uint64_t size,
                CUmemGenericAllocationHandle memory);

}  // namespace scuda::server
