// Copies. Every "device" range must lie inside one live allocation; async
// variants run immediately.
#include <cuda.h>

#include <cstring>

#include "allocations.h"
#include "state.h"
#include "work.h"

using namespace scuda_double;

namespace {

void* host(uintptr_t address) { return reinterpret_cast<void*>(address); }

CUresult copy_checked(uintptr_t dst, bool dst_device, uintptr_t src, bool src_device, size_t n) {
  if (n == 0) return CUDA_SUCCESS;
  if (dst == 0 || src == 0) return CUDA_ERROR_INVALID_VALUE;
  if (dst_device && !device_range(dst, n)) return CUDA_ERROR_INVALID_VALUE;
  if (src_device && !device_range(src, n)) return CUDA_ERROR_INVALID_VALUE;
  std::memmove(host(dst), host(src), n);
  return CUDA_SUCCESS;
}

// Unified addressing: an address inside an allocation is device memory.
CUresult copy_unified(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  bool dst_device = allocation_base(dst) != 0;
  bool src_device = allocation_base(src) != 0;
  return copy_checked(dst, dst_device, src, src_device, n);
}

uintptr_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

}  // namespace

CUresult scuda_double::copy_device(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return copy_checked(dst, true, src, true, bytes);
}

extern "C" {

CUresult cuMemcpyHtoD_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  return copy_checked(dstDevice, true, address(srcHost), false, ByteCount);
}

CUresult cuMemcpyDtoH_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  return copy_checked(address(dstHost), false, srcDevice, true, ByteCount);
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  return copy_checked(dstDevice, true, srcDevice, true, ByteCount);
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void* srcHost, size_t ByteCount,
                              CUstream hStream) {
  Call call = begin_on_stream(hStream);
  if (call.status != CUDA_SUCCESS) return call.status;
  return copy_checked(dstDevice, true, address(srcHost), false, ByteCount);
}

CUresult cuMemcpyDtoHAsync_v2(void* dstHost, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream) {
  Call call = begin_on_stream(hStream);
  if (call.status != CUDA_SUCCESS) return call.status;
  return copy_checked(address(dstHost), false, srcDevice, true, ByteCount);
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dstDevice, CUdeviceptr srcDevice, size_t ByteCount,
                              CUstream hStream) {
  Call call = begin_on_stream(hStream);
  if (call.status != CUDA_SUCCESS) return call.status;
  Work work;
  work.type = CU_GRAPH_NODE_TYPE_MEMCPY;
  work.dst = dstDevice;
  work.src = srcDevice;
  work.bytes = ByteCount;
  return submit(hStream, work);
}

CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  return copy_unified(dst, src, ByteCount);
}

CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream) {
  Call call = begin_on_stream(hStream);
  if (call.status != CUDA_SUCCESS) return call.status;
  return copy_unified(dst, src, ByteCount);
}

}  // extern "C"
