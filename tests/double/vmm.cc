// Virtual memory management. A reservation is an inaccessible host mapping;
// cuMemMap maps a memfd of cuMemCreate's over a piece of it and records it as
// an allocation, so that copies and kernels reach it like any other. Its
// descriptor is what cuMemExportToShareableHandle hands out, so that two
// session processes share memory as two processes share a GPU's. Unlike the
// driver, a handle is mapped whole (offset 0, its size) and at one place at a
// time.
#include <cuda.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

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

// Pinned host memory of NUMA node 0, which the double's granularity
// answers for (as the driver does) but never creates.
bool pinned_on_host(const CUmemAllocationProp* prop) {
  return prop != nullptr && prop->type == CU_MEM_ALLOCATION_TYPE_PINNED &&
         (prop->location.type == CU_MEM_LOCATION_TYPE_HOST ||
          (prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA && prop->location.id == 0));
}

bool granular(size_t value) { return value % kGranularity == 0; }

// Fresh inaccessible pages over [ptr, ptr + size).
bool unmap_pages(uintptr_t ptr, size_t size) {
  void* at = mmap(reinterpret_cast<void*>(ptr), size, PROT_NONE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  return at != MAP_FAILED;
}

bool map_pages(uintptr_t ptr, size_t size, int fd) {
  void* at = mmap(reinterpret_cast<void*>(ptr), size, PROT_READ | PROT_WRITE,
                  MAP_SHARED | MAP_FIXED, fd, 0);
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
  state().used[p->device] -= p->size;
  close(p->fd);
  state().physical.erase(reinterpret_cast<void*>(handle));
}

CUresult add_physical(int fd, size_t size, bool exportable, CUdevice dev,
                      CUmemGenericAllocationHandle* handle) {
  if (exceeds_memory(size, dev)) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  state().used[dev] += size;
  auto p = std::make_unique<Physical>();
  p->size = size;
  p->device = dev;
  p->fd = fd;
  p->exportable = exportable;
  *handle = state().physical.add(std::move(p));
  return CUDA_SUCCESS;
}

bool posix_fd_requested(const CUmemAllocationProp* prop) {
  return (prop->requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) != 0;
}

}  // namespace

extern "C" {

CUresult cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                       CUmemAllocationGranularity_flags) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (granularity == nullptr || !(pinned_on_device(prop) || pinned_on_host(prop)))
    return CUDA_ERROR_INVALID_VALUE;
  *granularity = kGranularity;
  return CUDA_SUCCESS;
}

// Like the driver, takes the address asked for when it is free.
CUresult cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (ptr == nullptr || size == 0 || !granular(size) || alignment > kGranularity)
    return CUDA_ERROR_INVALID_VALUE;
  void* block = mmap(reinterpret_cast<void*>(addr), size + kGranularity, PROT_NONE,
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
  const int fd = memfd_create("scuda-double-memory", MFD_CLOEXEC);
  if (fd < 0) return CUDA_ERROR_OUT_OF_MEMORY;
  if (ftruncate(fd, static_cast<off_t>(size)) != 0) {
    close(fd);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return add_physical(fd, size, posix_fd_requested(prop), prop->location.id, handle);
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  Physical* p = find_physical(handle);
  if (p == nullptr || p->refs == 0) return CUDA_ERROR_INVALID_VALUE;
  if (--p->refs == 0 && !p->mapped_at) forget_physical(handle, p);
  return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  Physical* p = find_physical(handle);
  if (p == nullptr || p->refs == 0 || p->mapped_at || offset || flags || size != p->size ||
      !granular(ptr) || !inside_reservation(ptr, size) || overlaps_allocation(ptr, size))
    return CUDA_ERROR_INVALID_VALUE;
  if (!map_pages(ptr, size, p->fd)) return CUDA_ERROR_OUT_OF_MEMORY;
  Allocation a;
  a.size = size;
  a.physical = handle;
  a.device = p->device;
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
  unmap_pages(ptr, size);
  Physical* p = find_physical(handle);
  p->mapped_at = 0;
  if (p->refs == 0) forget_physical(handle, p);
  return CUDA_SUCCESS;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc* desc, size_t count) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (desc == nullptr || count == 0 || !device_range(ptr, size)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i)
    if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || !valid_device(desc[i].location.id))
      return CUDA_ERROR_INVALID_VALUE;
  Allocation& a = state().allocations.at(allocation_base(ptr));
  for (size_t i = 0; i < count; ++i) {
    const unsigned bit = 1u << desc[i].location.id;
    a.access =
        desc[i].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE ? a.access | bit : a.access & ~bit;
  }
  return CUDA_SUCCESS;
}

// What cuMemSetAccess let the device read and write: all or nothing here.
CUresult cuMemGetAccess(unsigned long long* flags, const CUmemLocation* location, CUdeviceptr ptr) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (flags == nullptr || location == nullptr || location->type != CU_MEM_LOCATION_TYPE_DEVICE ||
      !valid_device(location->id))
    return CUDA_ERROR_INVALID_VALUE;
  auto it = state().allocations.find(allocation_base(ptr));
  if (it == state().allocations.end() || !it->second.physical) return CUDA_ERROR_INVALID_VALUE;
  *flags = it->second.access & (1u << location->id) ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                                                    : CU_MEM_ACCESS_FLAGS_PROT_NONE;
  return CUDA_SUCCESS;
}

CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle* handle, void* addr) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  const uintptr_t base = allocation_base(reinterpret_cast<uintptr_t>(addr));
  auto it = state().allocations.find(base);
  if (handle == nullptr || it == state().allocations.end() || !it->second.physical)
    return CUDA_ERROR_INVALID_VALUE;
  find_physical(it->second.physical)->refs++;
  *handle = it->second.physical;
  return CUDA_SUCCESS;
}

CUresult cuMemExportToShareableHandle(void* shareable, CUmemGenericAllocationHandle handle,
                                      CUmemAllocationHandleType type, unsigned long long flags) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  Physical* p = find_physical(handle);
  if (shareable == nullptr || p == nullptr || p->refs == 0 || flags ||
      type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR || !p->exportable)
    return CUDA_ERROR_INVALID_VALUE;
  const int fd = dup(p->fd);
  if (fd < 0) return CUDA_ERROR_OPERATING_SYSTEM;
  *static_cast<int*>(shareable) = fd;
  return CUDA_SUCCESS;
}

CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle, void* os_handle,
                                        CUmemAllocationHandleType type) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  struct stat st {};
  const int fd = static_cast<int>(reinterpret_cast<intptr_t>(os_handle));
  if (handle == nullptr || type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR ||
      fstat(fd, &st) != 0 || st.st_size <= 0 || !granular(static_cast<size_t>(st.st_size)))
    return CUDA_ERROR_INVALID_VALUE;
  const int mine = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (mine < 0) return CUDA_ERROR_OPERATING_SYSTEM;
  // The descriptor does not say whose memory it was: the double takes device 0's.
  return add_physical(mine, static_cast<size_t>(st.st_size), true, 0, handle);
}

}  // extern "C"
