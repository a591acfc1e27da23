// A module's functions and a library's kernels, held by name: their count
// and their handles in name order, as cuModuleGetFunctionCount /
// cuModuleEnumerateFunctions and the library calls answer them.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <string>

namespace scuda_double {

using NameList = std::map<std::string, uintptr_t>;

// `names` is null when the module or library is unknown.
inline CUresult count_names(const NameList* names, unsigned* count) {
  if (names == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = static_cast<unsigned>(names->size());
  return CUDA_SUCCESS;
}

// At most `n` handles, in name order.
template <class Handle>
CUresult list_names(const NameList* names, Handle* out, unsigned n) {
  if (names == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  unsigned i = 0;
  for (auto it = names->begin(); it != names->end() && i < n; ++it)
    out[i++] = reinterpret_cast<Handle>(it->second);
  return CUDA_SUCCESS;
}

}  // namespace scuda_double
