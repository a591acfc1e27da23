// Device allocations the client knows of, so that unified copies can tell
// device addresses from host ones.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace scuda::client {

void note_allocation(CUdeviceptr base, size_t size);
void forget_allocation(CUdeviceptr base);
bool is_device_address(const void* p);
// True when [base, base + size) lies inside one known allocation.
bool inside_allocation(CUdeviceptr base, size_t size);
// The allocation holding `address`, as the program asked for it, when it is
// one the client placed itself (mapped_allocations.cc): the driver would
// describe the mapping, rounded to the granularity, or a small one's whole
// chunk, instead.
bool mapped_range(CUdeviceptr address, CUdeviceptr* base, size_t* size);
// True when [address, address + size) starts in such an allocation and runs
// past its end: the driver, which sees the mapping, would not refuse it.
bool runs_past_mapped(CUdeviceptr address, size_t size);
// True when a box of w x h x d bytes at (x, y, z) lies inside array `a`,
// one the client created with a plain format (arrays.cc).
bool array_holds(CUarray a, size_t x, size_t y, size_t z, size_t w, size_t h, size_t d);

// Bytes per element of array `a` (asking the session for an array made
// elsewhere); 0 when `a` is unknown or its format has no plain element.
size_t array_element_bytes(CUarray a);

// Managed memory (managed_memory.cc): allocated on the server and mapped at
// the same address here. free_managed does nothing for other memory.
CUresult allocate_managed(CUdeviceptr* dptr, size_t size, unsigned flags);
// Frees `base` with `free_on_server` and, when that succeeds and `base` is
// managed memory, its pages here; free_on_server's result.
CUresult free_managed(CUdeviceptr base, CUresult (*free_on_server)(CUdeviceptr));

// Device memory at addresses the client chooses (mapped_allocations.cc).
// allocate_mapped and free_mapped return false, having done nothing, for
// what they leave to cuMemAlloc_v2 and cuMemFree_v2; else *rc is the result.
// free_mapped also forgets the allocation (note_allocation's record).
bool allocate_mapped(CUdeviceptr* dptr, size_t size, CUresult* rc);
bool free_mapped(CUdeviceptr dptr, CUresult* rc);
// Drops the pointer attributes kept for the allocation at `base`
// (pointer_attributes.cc), which free_mapped does.
void forget_attributes(CUdeviceptr base);
// Maps memory another session exported (ipc.cc) at a free address of
// `size` bytes: open(at) asks the server to and returns its result, in *rc,
// and *at is the address. False, having done nothing, when the client does
// not place allocations (then the server must choose).
bool map_imported(uint64_t size, const std::function<CUresult(uint64_t at)>& open, uint64_t* at,
                  CUresult* rc);
// Unmaps what map_imported mapped at `at`, one-way.
CUresult unmap_imported(uint64_t at);
// True when an allocation of allocate_mapped's starts at `base`.
bool mapped_allocation(CUdeviceptr base);
// The device of the allocation (or small allocations' chunk) the client
// placed at `address`; false when it placed none there.
bool placed_device(uint64_t address, CUdevice* dev);

}  // namespace scuda::client
