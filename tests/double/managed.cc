// Managed memory: an allocation like any other (the double's device memory is
// host memory already); prefetches and advice are checked, then accepted.
#include <cuda.h>

#include <cstring>

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

CUresult cuMemPrefetchAsync_v2(CUdeviceptr ptr, size_t count, CUmemLocation to, unsigned int flags,
                               CUstream stream) {
  Call call = begin_on_stream(stream);
  if (call.status != CUDA_SUCCESS) return call.status;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = check_range(ptr, count); rc != CUDA_SUCCESS) return rc;
  state().allocations.at(allocation_base(ptr)).last_prefetch =
      to.type == CU_MEM_LOCATION_TYPE_DEVICE ? to.id : CU_DEVICE_CPU;
  return CUDA_SUCCESS;
}

// A discarded range's contents are undefined: the double makes them 0xdd,
// so that a test can tell whether a reader saw the device's bytes.
CUresult cuMemDiscardBatchAsync(CUdeviceptr* dptrs, size_t* sizes, size_t count,
                                unsigned long long flags, CUstream stream) {
  Call call = begin_on_stream(stream);
  if (call.status != CUDA_SUCCESS) return call.status;
  if (dptrs == nullptr || sizes == nullptr || count == 0 || flags != 0)
    return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i)
    if (CUresult rc = check_range(dptrs[i], sizes[i]); rc != CUDA_SUCCESS) return rc;
  for (size_t i = 0; i < count; ++i) std::memset(reinterpret_cast<void*>(dptrs[i]), 0xdd, sizes[i]);
  return CUDA_SUCCESS;
}

CUresult cuMemAdvise_v2(CUdeviceptr ptr, size_t count, CUmem_advise advice, CUmemLocation) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
    return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = check_range(ptr, count); rc != CUDA_SUCCESS) return rc;
  Allocation& a = state().allocations.at(allocation_base(ptr));
  if (advice == CU_MEM_ADVISE_SET_READ_MOSTLY) a.read_mostly = true;
  if (advice == CU_MEM_ADVISE_UNSET_READ_MOSTLY) a.read_mostly = false;
  return CUDA_SUCCESS;
}

// Read-mostly advice and the last prefetch's device, for the whole
// allocation that holds the range.
CUresult cuMemRangeGetAttribute(void* data, size_t size, CUmem_range_attribute attribute,
                                CUdeviceptr ptr, size_t count) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (CUresult rc = check_range(ptr, count); rc != CUDA_SUCCESS) return rc;
  if (data == nullptr || size != sizeof(int)) return CUDA_ERROR_INVALID_VALUE;
  const Allocation& a = state().allocations.at(allocation_base(ptr));
  switch (attribute) {
    case CU_MEM_RANGE_ATTRIBUTE_READ_MOSTLY: *static_cast<int*>(data) = a.read_mostly; break;
    case CU_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION:
      *static_cast<int*>(data) = a.last_prefetch;
      break;
    default: return CUDA_ERROR_NOT_SUPPORTED;
  }
  return CUDA_SUCCESS;
}

}  // extern "C"
