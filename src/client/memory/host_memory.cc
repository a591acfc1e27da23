// Page-locked host memory. The GPU is on another machine, so nothing here can
// be pinned for its DMA: the client hands out page-aligned memory of its own
// and remembers the flags, and copies from it travel like any host memory.
// (LUPINE #512 and GVirtuS's notes: the alignment matters to callers.)
// Memory mapped for the device (CU_MEMHOSTALLOC_DEVICEMAP) is managed memory
// instead, so that its host address is its device address, as with UVA; or,
// where kernels poll it while the host writes it (NCCL's), a live mirror
// (live_mirrors.h).
// Under UVA the other blocks are device-accessible too (XLA's redzone checks
// and some samples hand them to kernels and memsets), but mirroring every
// block would cost a comparison of all of them at each launch (PyTorch keeps
// gigabytes of staging buffers): a block is mirrored only once device work
// names it (device_view, mirror_argument_pointers).
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/memory/host_memory.h"
#include "client/memory/live_mirrors.h"
#include "client/memory/memory.h"
#include "client/memory/published_spans.h"
#include "client/memory/registered_memory.h"
#include "client/pools/route.h"
#include "client/runtime.h"
#include "client/state.h"
#include "client/transport/session.h"
#include "common/lock_order.h"
#include "custom.h"

namespace scuda::client {

namespace {

struct HostBlock {
  size_t size;
  unsigned flags;     // CU_MEMHOSTALLOC_DEVICEMAP: managed memory, or live
  bool live = false;  // a live mirror's, of whole words (live_size)
};

size_t live_size(size_t size) { return (size + 7) & ~size_t{7}; }

// A mapped block kept in step while kernels run (live_mirrors.h), `eager`
// where it stands in for managed memory; nullptr, said once, when it
// cannot be.
void* live_block(size_t size, bool eager) {
  void* p =
      mmap(nullptr, live_size(size), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  if (const CUresult rc = live_mirrors::add(p, live_size(size), eager); rc != CUDA_SUCCESS) {
    munmap(p, live_size(size));
    static std::once_flag once;
    std::call_once(once, [rc] {
      spdlog::warn("cuMemHostAlloc: a mapped block could not be a live mirror (CUresult {})",
                   static_cast<int>(rc));
    });
    return nullptr;
  }
  return p;
}

}  // namespace

namespace parts {

struct HostMemory {
  RankedMutex mu{LockRank::kLeaf, "HostMemory::mu"};
  std::map<void*, HostBlock> blocks;
};

}  // namespace parts

namespace {

parts::HostMemory& host_memory() { return client_state().host_memory.get(); }

// The blocks kept on the client's side, which launches search without the
// lock.
PublishedSpans g_plain;

// With the lock held, after the blocks changed.
void publish_plain_spans() {
  PublishedSpans::Spans spans;
  for (const auto& [p, block] : host_memory().blocks) {
    if (block.flags & CU_MEMHOSTALLOC_DEVICEMAP) continue;
    const auto begin = reinterpret_cast<uintptr_t>(p);
    spans.emplace_back(begin, begin + block.size);
  }
  g_plain.publish(std::move(spans));
}

// cudart asks for a device mapping of all page-locked memory. When no
// address the server offers is free here, the block is still page-locked
// memory for copies; only cuMemHostGetDevicePointer fails for it.
unsigned unmapped(unsigned flags) {
  static std::once_flag once;
  std::call_once(once, [] {
    spdlog::warn(
        "cuMemHostAlloc: a block could not be mapped for the device at the same address "
        "on the server; it works for copies, and cuMemHostGetDevicePointer fails for it");
  });
  return flags & ~CU_MEMHOSTALLOC_DEVICEMAP;
}

CUresult host_alloc(void** pp, size_t size, unsigned flags) {
  if (!connection()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!pp || size == 0) return CUDA_ERROR_INVALID_VALUE;
  void* p = nullptr;
  bool live = false;
  if ((flags & CU_MEMHOSTALLOC_DEVICEMAP) && live_mirrors::wanted())
    live = (p = live_block(size, false));
  if ((flags & CU_MEMHOSTALLOC_DEVICEMAP) && !p) {
    CUdeviceptr dptr = 0;
    // Managed memory where the server has it (only the first of several
    // has: allocate_managed); else an eager live block.
    if (routed_server() == 0 && allocate_managed(&dptr, size, CU_MEM_ATTACH_GLOBAL) == CUDA_SUCCESS)
      p = reinterpret_cast<void*>(dptr);
    else if (!(live = (p = live_block(size, true)))) flags = unmapped(flags);
  }
  if (!p) {
    p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  }
  std::lock_guard lock(host_memory().mu);
  host_memory().blocks[p] = {size, flags, live};
  if (!(flags & CU_MEMHOSTALLOC_DEVICEMAP)) publish_plain_spans();
  *pp = p;
  return CUDA_SUCCESS;
}

// With the lock held: the block holding `p` (its base in *base), or nullptr.
const HostBlock* find_block(const void* p, void** base = nullptr) {
  auto& blocks = host_memory().blocks;
  auto it = blocks.upper_bound(const_cast<void*>(p));
  if (it == blocks.begin()) return nullptr;
  --it;
  const bool inside = static_cast<const char*>(p) < static_cast<char*>(it->first) + it->second.size;
  if (inside && base) *base = it->first;
  return inside ? &it->second : nullptr;
}

// The mirror's address of `p` in a block kept on the client's side, the
// block mirrored first if it is not yet; 0 when `p` is in no such block or
// the mirror fails (mirror_for_device says why).
CUdeviceptr mirror_of(uintptr_t p) {
  void* base = nullptr;
  size_t size = 0;
  {
    std::lock_guard lock(host_memory().mu);
    const HostBlock* block = find_block(reinterpret_cast<void*>(p), &base);
    if (!block || (block->flags & CU_MEMHOSTALLOC_DEVICEMAP)) return 0;
    size = block->size;
  }
  CUdeviceptr device = 0;
  if (registered::mirror_for_device(base, size, &device) != CUDA_SUCCESS) return 0;
  return device + (p - reinterpret_cast<uintptr_t>(base));
}

}  // namespace

CUdeviceptr device_view(CUdeviceptr p) {
  registered::name_for_device(reinterpret_cast<const void*>(p));
  if (g_plain.any() && PublishedSpans::contains(*g_plain.snapshot(), p))
    if (const CUdeviceptr device = mirror_of(p)) return device;
  return registered::translated(p);
}

void mirror_argument_pointers(uint8_t* args, size_t size) {
  registered::name_arguments(args, size);
  g_plain.for_each_word_inside(args, size, [](uint64_t word, size_t) { mirror_of(word); });
  registered::translate_arguments(args, size);
}

bool is_host_block(const void* p, unsigned* flags) {
  std::lock_guard lock(host_memory().mu);
  const HostBlock* block = find_block(p);
  if (block && flags) *flags = block->flags;
  return block != nullptr;
}

}  // namespace scuda::client

using scuda::client::host_memory;

CUresult scuda::client::custom::cuMemAllocHost_v2(void** pp, size_t size) {
  return scuda::client::host_alloc(pp, size, 0);
}

CUresult scuda::client::custom::cuMemHostAlloc(void** pp, size_t size, unsigned int flags) {
  return scuda::client::host_alloc(pp, size, flags);
}

CUresult scuda::client::custom::cuMemFreeHost(void* p) {
  std::unique_lock lock(host_memory().mu);
  auto it = host_memory().blocks.find(p);
  if (it == host_memory().blocks.end()) return CUDA_ERROR_INVALID_VALUE;
  const scuda::client::HostBlock block = it->second;
  host_memory().blocks.erase(it);
  if (!(block.flags & CU_MEMHOSTALLOC_DEVICEMAP)) scuda::client::publish_plain_spans();
  lock.unlock();
  if (block.live) {
    scuda::client::live_mirrors::remove(p);
    munmap(p, scuda::client::live_size(block.size));
    return CUDA_SUCCESS;
  }
  if (block.flags & CU_MEMHOSTALLOC_DEVICEMAP)
    return ::cuMemFree_v2(reinterpret_cast<CUdeviceptr>(p));
  scuda::client::registered::drop_mirrors(p, block.size);
  munmap(p, block.size);
  return CUDA_SUCCESS;
}

CUresult scuda::client::custom::cuMemHostGetFlags(unsigned int* flags, void* p) {
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
// blocks and registered memory are mirrored in the session, usually at their
// own address.
CUresult scuda::client::custom::cuMemHostGetDevicePointer_v2(CUdeviceptr* pdptr, void* p,
                                                             unsigned int flags) {
  if (!pdptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  unsigned registered_flags = 0;
  if (scuda::client::registered::find(p, &registered_flags, pdptr)) {
    scuda::client::registered::name_for_device(p);
    return CUDA_SUCCESS;
  }
  std::unique_lock lock(host_memory().mu);
  const scuda::client::HostBlock* block = scuda::client::find_block(p);
  if (!block) return CUDA_ERROR_INVALID_VALUE;
  if (block->flags & CU_MEMHOSTALLOC_DEVICEMAP) {
    *pdptr = reinterpret_cast<CUdeviceptr>(p);
    return CUDA_SUCCESS;
  }
  lock.unlock();
  // Under UVA every block has a device address (UnifiedMemoryPerf asks for
  // one of cudaMallocHost memory): the block is mirrored from now on.
  const CUdeviceptr device = scuda::client::mirror_of(reinterpret_cast<uintptr_t>(p));
  if (!device) return CUDA_ERROR_OUT_OF_MEMORY;
  *pdptr = device;
  return CUDA_SUCCESS;
}

CUresult scuda::client::custom::cuMemHostRegister_v2(void* p, size_t size, unsigned int flags) {
  return scuda::client::registered::register_range(p, size, flags);
}

CUresult scuda::client::custom::cuMemHostUnregister(void* p) {
  return scuda::client::registered::unregister_range(p);
}
