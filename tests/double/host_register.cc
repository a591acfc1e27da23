// Registered host memory: the caller's memory becomes "device" memory at its
// own address, which is what the double's device memory is anyway.
#include <cuda.h>

#include "allocations.h"
#include "state.h"

using namespace scuda_double;

extern "C" {

CUresult cuMemHostRegister_v2(void* p, size_t size, unsigned int) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  const auto base = reinterpret_cast<uintptr_t>(p);
  if (!p || size == 0) return CUDA_ERROR_INVALID_VALUE;
  if (allocation_base(base) || allocation_base(base + size - 1))
    return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  Allocation a;
  a.size = size;
  a.ctx = call.ctx_id;
  a.registered = true;
  state().allocations[base] = a;
  return CUDA_SUCCESS;
}

CUresult cuMemHostUnregister(void* p) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  auto& allocations = state().allocations;
  auto it = allocations.find(reinterpret_cast<uintptr_t>(p));
  if (it == allocations.end() || !it->second.registered)
    return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  allocations.erase(it);
  return CUDA_SUCCESS;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* dptr, void* p, unsigned int flags) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  const auto address = reinterpret_cast<uintptr_t>(p);
  const uintptr_t base = allocation_base(address);
  if (!dptr || flags != 0 || !base || !state().allocations.at(base).registered)
    return CUDA_ERROR_INVALID_VALUE;
  *dptr = address;
  return CUDA_SUCCESS;
}

}  // extern "C"
