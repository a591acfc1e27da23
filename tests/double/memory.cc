// Allocation entry points. Memory lives in host RAM (see allocations.h).
#include <cuda.h>

#include "allocations.h"
#include "state.h"

using namespace scuda_double;

namespace {

constexpr size_t kPitchAlignment = 512;

}  // namespace

extern "C" {

CUresult cuMemAlloc_v2(CUdeviceptr* dptr, size_t bytesize) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return allocate(bytesize, call.ctx_id, 0, dptr);
}

// Freeing 0 is a no-op, as with cudaFree(nullptr).
CUresult cuMemFree_v2(CUdeviceptr dptr) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (dptr == 0) return CUDA_SUCCESS;
  auto it = state().allocations.find(dptr);
  if (it == state().allocations.end() || it->second.module != 0 || it->second.physical != 0)
    return CUDA_ERROR_INVALID_VALUE;
  release(dptr);
  return CUDA_SUCCESS;
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *free = total_memory() - state().used[call.ctx->device];
  *total = total_memory();
  return CUDA_SUCCESS;
}

CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes,
                            size_t Height, unsigned int ElementSizeBytes) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  bool element_ok = ElementSizeBytes == 4 || ElementSizeBytes == 8 || ElementSizeBytes == 16;
  if (dptr == nullptr || pPitch == nullptr || !element_ok || WidthInBytes == 0 || Height == 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  size_t pitch = (WidthInBytes + kPitchAlignment - 1) / kPitchAlignment * kPitchAlignment;
  if (Height > total_memory() / pitch) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult result = allocate(pitch * Height, call.ctx_id, 0, dptr);
  if (result == CUDA_SUCCESS) *pPitch = pitch;
  return result;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize, CUdeviceptr dptr) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  uintptr_t base = allocation_base(dptr);
  if (base == 0) return CUDA_ERROR_NOT_FOUND;
  if (pbase != nullptr) *pbase = base;
  if (psize != nullptr) *psize = state().allocations.at(base).size;
  return CUDA_SUCCESS;
}

}  // extern "C"
