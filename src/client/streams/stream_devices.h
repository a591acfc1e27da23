// The device of each stream the program created: what names a kernel's
// occupancy answer on that stream across runs (launch.cc), since a
// CUkernel's context is the stream's.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace scuda::client {

// The device of stream `id`, if this process created it.
bool stream_device(uint64_t id, CUdevice* dev);

}  // namespace scuda::client
