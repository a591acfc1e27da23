// Allocation entry points. Memory lives in host RAM (see allocations.h).
#include <cuda.h>

#include "allocations.h"
#include "graph.h"
#include "state.h"
#include "work.h"

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

// Stream-ordered allocation: at once, as cuMemAlloc, outside a capture; in
// one, a memory allocation node of the capture's graph, whose address is
// fixed as it is added, as the driver fixes it.
CUresult cuMemAllocAsync(CUdeviceptr* dptr, size_t bytesize, CUstream hStream) {
  Call call = begin_on_stream(hStream);
  if (call.status != CUDA_SUCCESS) return call.status;
  if (dptr == nullptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (!capturing(hStream)) return allocate(bytesize, call.ctx_id, 0, dptr);
  CUDA_MEM_ALLOC_NODE_PARAMS_v2 params{};
  params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params.poolProps.location = {CU_MEM_LOCATION_TYPE_DEVICE, call.ctx->device};
  params.bytesize = bytesize;
  Work work;
  if (CUresult rc = alloc_work(&params, call.ctx_id, &work); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = submit(hStream, work); rc != CUDA_SUCCESS) return rc;
  *dptr = params.dptr;
  return CUDA_SUCCESS;
}

// Frees at once outside a capture; the double has no memory free nodes.
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream) {
  {
    Call call = begin_on_stream(hStream);
    if (call.status != CUDA_SUCCESS) return call.status;
    if (capturing(hStream)) return CUDA_ERROR_NOT_SUPPORTED;
  }
  return cuMemFree_v2(dptr);
}

CUresult cuMemGetInfo_v2(size_t* free, size_t* total) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (free == nullptr || total == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *free = total_memory() - state().used[call.ctx->device];
  *total = total_memory();
  return CUDA_SUCCESS;
}

CUresult cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes) {
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
