#include "functions.h"

#include "state.h"

namespace scuda_double {

const KernelDesc* resolve_function(CUfunction fn) {
  if (const Function* function = state().functions.find(fn)) return function->kernel;
  if (const Kernel* kernel = state().kernels.find(fn)) return kernel->desc;
  return nullptr;
}

CUresult param_info(const KernelDesc* kernel, size_t index, size_t* offset, size_t* size) {
  if (kernel == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (index >= kernel->sizes.size()) return CUDA_ERROR_INVALID_VALUE;
  if (offset != nullptr) *offset = kernel->offsets[index];
  if (size != nullptr) *size = kernel->sizes[index];
  return CUDA_SUCCESS;
}

}  // namespace scuda_double
