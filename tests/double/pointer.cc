// cuPointerGetAttributes for the attributes the tests ask about. A range is
// the allocation's, or for memory of cuMemMap the mapping's, as the driver
// describes it.
#include <cuda.h>

#include <cstring>

#include "allocations.h"
#include "state.h"

using namespace scuda_double;

namespace {

template <class T>
void put(void* data, T value) {
  std::memcpy(data, &value, sizeof value);
}

CUresult describe(CUpointer_attribute attr, CUdeviceptr ptr, uintptr_t base, const Allocation& a,
                  void* data) {
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: put(data, ptr); return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
      put(data, static_cast<unsigned>(CU_MEMORYTYPE_DEVICE));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
      put(data, static_cast<int>(a.device));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
      put(data, static_cast<CUdeviceptr>(base));
      return CUDA_SUCCESS;
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE: put(data, a.size); return CUDA_SUCCESS;
    default: return CUDA_ERROR_NOT_SUPPORTED;
  }
}

}  // namespace

extern "C" {

CUresult cuPointerGetAttributes(unsigned int count, CUpointer_attribute* attributes, void** data,
                                CUdeviceptr ptr) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (attributes == nullptr || data == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const uintptr_t base = allocation_base(ptr);
  if (base == 0) return CUDA_ERROR_INVALID_VALUE;
  const Allocation& a = state().allocations.at(base);
  for (unsigned i = 0; i < count; ++i)
    if (CUresult rc = describe(attributes[i], ptr, base, a, data[i]); rc != CUDA_SUCCESS) return rc;
  return CUDA_SUCCESS;
}

}  // extern "C"
