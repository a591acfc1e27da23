// Managed memory: an allocation like any other (the double's device memory is
// host memory already); prefetches and advice are checked, then accepted.
#include <cuda.h>

#include "allocations.h"
#include "state.h"

using namespace scuda_double;

namespace {

CUresult check_range(CUdeviceptr ptr, size_t count) {
  if (count == 0 || !device_range(ptr, count)) return CUDA_ERROR_INVALID_VALUE;
  const auto& a = state().allocations.at(allocation_base(ptr));
  return a.managed ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // namespace

extern "C" {

CUresult cuMemAllocManaged(CUdeviceptr* dptr, size_t bytesize, unsigned int flags) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (dptr == nullptr || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
    return CUDA_ERROR_INVALID_VALUE;
  return allocate_managed(bytesize, call.ctx_id, dptr);
}

CUresult cuMemPrefetchAsync_v2(CUdeviceptr ptr, size_t count, CUmemLocation, unsigned int flags,
                               CUstream stream) {
  Call call = begin_on_stream(stream);
  if (call.status != CUDA_SUCCESS) return call.status;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return check_range(ptr, count);
}

CUresult cuMemAdvise_v2(CUdeviceptr ptr, size_t count, CUmem_advise advice, CUmemLocation) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
    return CUDA_ERROR_INVALID_VALUE;
  return check_range(ptr, count);
}

}  // extern "C"
