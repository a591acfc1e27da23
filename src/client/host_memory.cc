// Page-locked host memory. The GPU is on another machine, so nothing here can
// be pinned for its DMA: the client hands out page-aligned memory of its own
// and remembers the flags, and copies from it travel like any host memory.
// (LUPINE #512 and GVirtuS's notes: the alignment matters to callers.)
// Memory mapped for the device (CU_MEMHOSTALLOC_DEVICEMAP) is managed memory
// instead, so that its host address is its device address, as with UVA.
#include <sys/mman.h>

#include <map>
#include <mutex>

#include <spdlog/spdlog.h>

#include "client/host_memory.h"
#include "client/memory.h"
#include "client/registered_memory.h"
#include "client/runtime.h"
#include "client/session.h"

namespace scuda::client {

namespace {

struct HostBlock {
  size_t size;
  unsigned flags;  // CU_MEMHOSTALLOC_DEVICEMAP: managed memory
};

struct HostMemory {
  std::mutex mu;
  std::map<void*, HostBlock> blocks;
};

HostMemory& host_memory() {
  static HostMemory* h = new HostMemory;  // never freed: used until exit
  return *h;
}

// cudart asks for a device mapping of all page-locked memory. When no
// address the server offers is free here, the block is still page-locked
// memory for copies; only cuMemHostGetDevicePointer fails for it.
unsigned unmapped(unsigned flags) {
  static std::once_flag once;
  std::call_once(once, [] {
    spdlog::warn("cuMemHostAlloc: a block could not be mapped for the device at the same address "
                 "on the server; it works for copies, and cuMemHostGetDevicePointer fails for it");
  });
  return flags & ~CU_MEMHOSTALLOC_DEVICEMAP;
}

CUresult host_alloc(void** pp, size_t size, unsigned flags) {
  if (!connection()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!pp || size == 0) return CUDA_ERROR_INVALID_VALUE;
  void* p = nullptr;
  if (flags & CU_MEMHOSTALLOC_DEVICEMAP) {
    CUdeviceptr dptr = 0;
    if (allocate_managed(&dptr, size, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS)
      p = reinterpret_cast<void*>(dptr);
    else
      flags = unmapped(flags);
  }
  if (!p) {
    p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  std::lock_guard lock(host_memory().mu);
  host_memory().blocks[p] = {size, flags};
  *pp = p;
  return CUDA_SUCCESS;
}

// With the lock held: the block holding `p`, or nullptr.
const HostBlock* find_block(const void* p) {
  auto& blocks = host_memory().blocks;
  auto it = blocks.upper_bound(const_cast<void*>(p));
  if (it == blocks.begin()) return nullptr;
  --it;
  const bool inside = static_cast<const char*>(p) < static_cast<char*>(it->first) + it->second.size;
  return inside ? &it->second : nullptr;
}

}  // namespace

bool is_host_block(const void* p, unsigned* flags) {
  std::lock_guard lock(host_memory().mu);
  const HostBlock* block = find_block(p);
  if (block && flags) *flags = block->flags;
  return block != nullptr;
}

}  // namespace scuda::client

using scuda::client::host_memory;

extern "C" {

CUresult CUDAAPI cuMemAllocHost_v2(void** pp, size_t size) {
  SCUDA_PASSTHROUGH(cuMemAllocHost_v2, pp, size);
  return scuda::client::host_alloc(pp, size, 0);
}

CUresult CUDAAPI cuMemHostAlloc(void** pp, size_t size, unsigned int flags) {
  SCUDA_PASSTHROUGH(cuMemHostAlloc, pp, size, flags);
  return scuda::client::host_alloc(pp, size, flags);
}

CUresult CUDAAPI cuMemFreeHost(void* p) {
  SCUDA_PASSTHROUGH(cuMemFreeHost, p);
  std::unique_lock lock(host_memory().mu);
  auto it = host_memory().blocks.find(p);
  if (it == host_memory().blocks.end()) return CUDA_ERROR_INVALID_VALUE;
  const scuda::client::HostBlock block = it->second;
  host_memory().blocks.erase(it);
  lock.unlock();
  if (block.flags & CU_MEMHOSTALLOC_DEVICEMAP) return cuMemFree_v2(reinterpret_cast<CUdeviceptr>(p));
  munmap(p, block.size);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostGetFlags(unsigned int* flags, void* p) {
  SCUDA_PASSTHROUGH(cuMemHostGetFlags, flags, p);
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  CUdeviceptr device = 0;
  if (scuda::client::registered::find(p, flags, &device)) return CUDA_SUCCESS;
  std::lock_guard lock(host_memory().mu);
  const scuda::client::HostBlock* block = scuda::client::find_block(p);
  if (!block) return CUDA_ERROR_INVALID_VALUE;
  *flags = block->flags;
  return CUDA_SUCCESS;
}

// Mapped blocks are device memory at their host address; other page-locked
// blocks have no device address (the driver's answer for unmapped memory).
// Registered memory is mirrored in the session, usually at its own address.
CUresult CUDAAPI cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p, unsigned int flags) {
  SCUDA_PASSTHROUGH(cuMemHostGetDevicePointer_v2, pdptr, p, flags);
  if (!pdptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  unsigned registered_flags = 0;
  if (scuda::client::registered::find(p, &registered_flags, pdptr)) return CUDA_SUCCESS;
  std::lock_guard lock(host_memory().mu);
  const scuda::client::HostBlock* block = scuda::client::find_block(p);
  if (!block) return CUDA_ERROR_INVALID_VALUE;
  // Unmapped blocks answer as before this entry point existed; callers
  // (PyTorch's pinned memory) cope with it.
  if (!(block->flags & CU_MEMHOSTALLOC_DEVICEMAP)) return CUDA_ERROR_NOT_SUPPORTED;
  *pdptr = reinterpret_cast<CUdeviceptr>(p);
  return CUDA_SUCCESS;
}

}  // extern "C"
