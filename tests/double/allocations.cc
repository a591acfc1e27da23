#include "allocations.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <vector>

#include "state.h"

namespace scuda_double {
namespace {

constexpr size_t kAlignment = 256;

template <class Pred>
void release_where(Pred pred) {
  std::vector<uintptr_t> doomed;
  for (const auto& [base, allocation] : state().allocations) {
    if (pred(allocation)) doomed.push_back(base);
  }
  for (uintptr_t base : doomed) release(base);
}

}  // namespace

CUresult allocate(size_t size, uintptr_t ctx, uintptr_t module, CUdeviceptr* out) {
  State& s = state();
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  const CUdevice dev = device_of(ctx);
  if (exceeds_memory(size, dev)) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  void* block = std::aligned_alloc(kAlignment, rounded);
  if (block == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  uintptr_t base = reinterpret_cast<uintptr_t>(block);
  Allocation a{size, ctx, module};
  a.device = dev;
  s.allocations[base] = a;
  s.used[dev] += size;
  *out = base;
  return CUDA_SUCCESS;
}

// Small managed allocations are packed into shared arenas, as the driver
// packs them, so that several share a page; the arenas are never returned.
constexpr size_t kSmallManaged = 64 << 10;
constexpr size_t kArena = 2 << 20;

uintptr_t arena_take(size_t size) {
  static uintptr_t next = 0, end = 0;
  const size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  if (next + rounded > end) {
    void* arena = mmap(nullptr, kArena, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (arena == MAP_FAILED) return 0;
    next = reinterpret_cast<uintptr_t>(arena);
    end = next + kArena;
  }
  const uintptr_t base = next;
  next += rounded;
  return base;
}

CUresult allocate_managed(size_t size, uintptr_t ctx, CUdeviceptr* out) {
  State& s = state();
  if (size == 0) return CUDA_ERROR_INVALID_VALUE;
  const CUdevice dev = device_of(ctx);
  if (exceeds_memory(size, dev)) return CUDA_ERROR_OUT_OF_MEMORY;
  uintptr_t base = 0;
  if (size <= kSmallManaged) {
    base = arena_take(size);
  } else {
    void* block = mmap(nullptr, size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (block != MAP_FAILED) base = reinterpret_cast<uintptr_t>(block);
  }
  if (base == 0) return CUDA_ERROR_OUT_OF_MEMORY;
  Allocation a{size, ctx, 0, true};
  a.device = dev;
  s.allocations[base] = a;
  s.used[dev] += size;
  *out = base;
  return CUDA_SUCCESS;
}

void release(uintptr_t base) {
  State& s = state();
  auto it = s.allocations.find(base);
  if (it == s.allocations.end()) return;
  const Allocation a = it->second;
  s.allocations.erase(it);
  if (a.registered || a.physical) return;
  s.used[a.device] -= a.size;
  if (!a.managed) std::free(reinterpret_cast<void*>(base));
  else if (a.size > kSmallManaged) munmap(reinterpret_cast<void*>(base), a.size);
}

void release_allocations_of_context(uintptr_t ctx) {
  release_where([&](const Allocation& a) { return a.ctx == ctx; });
}

void release_allocations_of_module(uintptr_t module) {
  release_where([&](const Allocation& a) { return a.module == module; });
}

uintptr_t allocation_base(uintptr_t address) {
  const auto& allocations = state().allocations;
  auto it = allocations.upper_bound(address);
  if (it == allocations.begin()) return 0;
  --it;
  return address - it->first < it->second.size ? it->first : 0;
}

bool device_range(uintptr_t address, size_t size) {
  uintptr_t base = allocation_base(address);
  if (base == 0) return false;
  return size <= state().allocations.at(base).size - (address - base);
}

}  // namespace scuda_double
