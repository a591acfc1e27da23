// Virtual memory management. A reservation is an inaccessible host mapping;
// cuMemMap gives a piece of it fresh read/write pages and records it as an
// allocation, so that copies and kernels reach it like any other. Memory of
// cuMemCreate is only counted until mapped. Unlike the driver, a handle is
// mapped whole (offset 0, its size) and at one place at a time.
#include <cuda.h>
#include <sys/mman.h>

#include <memory>

#include "allocations.h"
#include "state.h"

using namespace scuda_double;

namespace {

constexpr size_t kGranularity = 2 << 20;

bool pinned_on_device(const CUmemAllocationProp* prop) {
  return prop != nullptr && prop->type == CU_MEM_ALLOCATION_TYPE_PINNED &&
         prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE && valid_device(prop->location.id);
}

bool granular(size_t value) { return value % kGranularity == 0; }

// Fresh pages over [ptr, ptr + size), accessible or not.
bool remap(uintptr_t ptr, size_t size, int prot) {
  void* at = mmap(reinterpret_cast<void*>(ptr), size, prot,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  return at != MAP_FAILED;
}

bool inside_reservation(uintptr_t ptr, size_t size) {
  const auto& r = state().reservations;
  auto it = r.upper_bound(ptr);
  if (it == r.begin()) return false;
  --it;
  return ptr - it->first < it->second && size <= it->second - (ptr - it->first);
}

bool overlaps_allocation(uintptr_t ptr, size_t size) {
  const auto& a = state().allocations;
  auto it = a.lower_bound(ptr);
  if (it != a.end() && it->first - ptr < size) return true;
  return allocation_base(ptr) != 0;
}

Physical* find_physical(CUmemGenericAllocationHandle handle) {
  return state().physical.find(reinterpret_cast<void*>(handle));
}

void forget_physical(CUmemGenericAllocationHandle handle, Physical* p) {
  state().used -= p->size;
  state().physical.erase(reinterpret_cast<void*>(handle));
}

}  // namespace

extern "C" {

CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (granularity == nullptr || !pinned_on_device(prop)) return CUDA_ERROR_INVALID_VALUE;
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr,
                             unsigned long long) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (ptr == nullptr || size == 0 || !granular(size) || alignment > kGranularity)
    return CUDA_ERROR_INVALID_VALUE;
  void* block = mmap(nullptr, size + kGranularity, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (block == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  const uintptr_t start = reinterpret_cast<uintptr_t>(block);
  const uintptr_t base = (start + kGranularity - 1) / kGranularity * kGranularity;
  if (base > start) munmap(block, base - start);
  munmap(reinterpret_cast<void*>(base + size), start + kGranularity - base);
  state().reservations[base] = size;
  *ptr = base;
  return CUDA_SUCCESS;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  auto it = state().reservations.find(ptr);
  if (it == state().reservations.end() || it->second != size || overlaps_allocation(ptr, size))
    return CUDA_ERROR_INVALID_VALUE;
  munmap(reinterpret_cast<void*>(ptr), size);
  state().reservations.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                     const CUmemAllocationProp* prop, unsigned long long flags) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (handle == nullptr || size == 0 || !granular(size) || !pinned_on_device(prop) || flags)
    return CUDA_ERROR_INVALID_VALUE;
  if (size > total_memory() - state().used) return CUDA_ERROR_OUT_OF_MEMORY;
  state().used += size;
  *handle = state().physical.add(std::make_unique<Physical>(Physical{size}));
  return CUDA_SUCCESS;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  Physical* p = find_physical(handle);
  if (p == nullptr || p->released) return CUDA_ERROR_INVALID_VALUE;
  if (p->mapped_at) p->released = true;
  else forget_physical(handle, p);
  return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  Physical* p = find_physical(handle);
  if (p == nullptr || p->released || p->mapped_at || offset || flags || size != p->size ||
      !granular(ptr) || !inside_reservation(ptr, size) || overlaps_allocation(ptr, size))
    return CUDA_ERROR_INVALID_VALUE;
  if (!remap(ptr, size, PROT_READ | PROT_WRITE)) return CUDA_ERROR_OUT_OF_MEMORY;
  Allocation a;
  a.size = size;
  a.physical = handle;
  state().allocations[ptr] = a;
  p->mapped_at = ptr;
  return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  auto it = state().allocations.find(ptr);
  if (it == state().allocations.end() || !it->second.physical || it->second.size != size)
    return CUDA_ERROR_INVALID_VALUE;
  const CUmemGenericAllocationHandle handle = it->second.physical;
  state().allocations.erase(it);
  remap(ptr, size, PROT_NONE);
  Physical* p = find_physical(handle);
  p->mapped_at = 0;
  if (p->released) forget_physical(handle, p);
  return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (desc == nullptr || count == 0 || !device_range(ptr, size)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i)
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || !valid_device(desc[i].location.id))
      return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

}  // extern "C"
