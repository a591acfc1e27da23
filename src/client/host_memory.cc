// Page-locked host memory. The GPU is on another machine, so nothing here can
// be pinned for its DMA: the client hands out page-aligned memory of its own
// and remembers the flags, and copies from it travel like any host memory.
// (LUPINE #512 and GVirtuS's notes: the alignment matters to callers.)
#include <sys/mman.h>

#include <map>
#include <mutex>

#include "client/host_memory.h"
#include "client/runtime.h"
#include "client/session.h"

namespace scuda::client {

namespace {

struct HostBlock {
  size_t size;
  unsigned flags;
};

struct HostMemory {
  std::mutex mu;
  std::map<void*, HostBlock> blocks;
};

HostMemory& host_memory() {
  static HostMemory* h = new HostMemory;  // never freed: used until exit
  return *h;
}

CUresult host_alloc(void** pp, size_t size, unsigned flags) {
  if (!connection()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!pp || size == 0) return CUDA_ERROR_INVALID_VALUE;
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
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

bool is_host_block(const void* p) {
  std::lock_guard lock(host_memory().mu);
  return find_block(p) != nullptr;
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
  std::lock_guard lock(host_memory().mu);
  auto it = host_memory().blocks.find(p);
  if (it == host_memory().blocks.end()) return CUDA_ERROR_INVALID_VALUE;
  munmap(p, it->second.size);
  host_memory().blocks.erase(it);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemHostGetFlags(unsigned int* flags, void* p) {
  SCUDA_PASSTHROUGH(cuMemHostGetFlags, flags, p);
  if (!flags) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(host_memory().mu);
  const scuda::client::HostBlock* block = scuda::client::find_block(p);
  if (!block) return CUDA_ERROR_INVALID_VALUE;
  *flags = block->flags;
  return CUDA_SUCCESS;
}

}  // extern "C"
