#include "allocations.h"

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
  if (size > kTotalMemory - s.used) return CUDA_ERROR_OUT_OF_MEMORY;
  size_t rounded = (size + kAlignment - 1) / kAlignment * kAlignment;
  void* block = std::aligned_alloc(kAlignment, rounded);
  if (block == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  uintptr_t base = reinterpret_cast<uintptr_t>(block);
  s.allocations[base] = Allocation{size, ctx, module};
  s.used += size;
  *out = base;
  return CUDA_SUCCESS;
}

void release(uintptr_t base) {
  State& s = state();
  auto it = s.allocations.find(base);
  if (it == s.allocations.end()) return;
  s.used -= it->second.size;
  s.allocations.erase(it);
  std::free(reinterpret_cast<void*>(base));
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
