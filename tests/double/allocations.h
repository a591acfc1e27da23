// "Device" memory: aligned host blocks whose addresses serve as CUdeviceptr.
// Callers hold the state lock.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace scuda_double {

CUresult allocate(size_t size, uintptr_t ctx, uintptr_t module, CUdeviceptr* out);
// Managed memory: fresh zeroed pages of its own, as a driver hands out.
CUresult allocate_managed(size_t size, uintptr_t ctx, CUdeviceptr* out);
void release(uintptr_t base);
void release_allocations_of_context(uintptr_t ctx);
void release_allocations_of_module(uintptr_t module);

// True when `size` bytes do not fit in the memory left on `dev`, after
// telling the registered asynchronous notification callbacks how far over it is.
bool exceeds_memory(size_t size, CUdevice dev);
// Base of the live allocation containing address, or 0.
uintptr_t allocation_base(uintptr_t address);
// True when [address, address + size) lies inside one live allocation.
bool device_range(uintptr_t address, size_t size);

}  // namespace scuda_double
