// cuMemsetD{8,16,32} and their 2D / Async forms; async runs immediately.
#include <cuda.h>

#include <algorithm>

#include "allocations.h"
#include "state.h"
#include "work.h"

using namespace scuda_double;

namespace {

template <class T>
CUresult fill_2d(CUdeviceptr dst, size_t pitch, T value, size_t width, size_t height) {
  if (width == 0 || height == 0) return CUDA_SUCCESS;
  size_t row_bytes = width * sizeof(T);
  if (dst % sizeof(T) != 0 || pitch % sizeof(T) != 0 || pitch < row_bytes) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (height - 1 > total_memory() / pitch) return CUDA_ERROR_INVALID_VALUE;
  if (!device_range(dst, pitch * (height - 1) + row_bytes)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t row = 0; row < height; ++row) {
    std::fill_n(reinterpret_cast<T*>(dst + row * pitch), width, value);
  }
  return CUDA_SUCCESS;
}

template <class T>
CUresult memset_2d(CUdeviceptr dst, size_t pitch, T value, size_t width, size_t height) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  return fill_2d(dst, pitch, value, width, height);
}

template <class T>
CUresult memset_2d_async(CUdeviceptr dst, size_t pitch, T value, size_t width, size_t height,
                         CUstream stream) {
  Call call = begin_on_stream(stream);
  if (call.status != CUDA_SUCCESS) return call.status;
  Work work;
  work.type = CU_GRAPH_NODE_TYPE_MEMSET;
  work.memset = {dst, pitch, value, sizeof(T), width, height};
  return submit(stream, work);
}

}  // namespace

CUresult scuda_double::fill(CUdeviceptr dst, size_t pitch, unsigned value, unsigned element,
                            size_t width, size_t height) {
  switch (element) {
    case 1: return fill_2d(dst, pitch, static_cast<uint8_t>(value), width, height);
    case 2: return fill_2d(dst, pitch, static_cast<uint16_t>(value), width, height);
    case 4: return fill_2d(dst, pitch, static_cast<uint32_t>(value), width, height);
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

extern "C" {

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char uc, size_t N) {
  return memset_2d(dst, N, uc, N, 1);
}

CUresult cuMemsetD16_v2(CUdeviceptr dst, unsigned short us, size_t N) {
  return memset_2d(dst, N * 2, us, N, 1);
}

CUresult cuMemsetD32_v2(CUdeviceptr dst, unsigned int ui, size_t N) {
  return memset_2d(dst, N * 4, ui, N, 1);
}

CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char uc, size_t N, CUstream hStream) {
  return memset_2d_async(dst, N, uc, N, 1, hStream);
}

CUresult cuMemsetD16Async(CUdeviceptr dst, unsigned short us, size_t N, CUstream hStream) {
  return memset_2d_async(dst, N * 2, us, N, 1, hStream);
}

CUresult cuMemsetD32Async(CUdeviceptr dst, unsigned int ui, size_t N, CUstream hStream) {
  return memset_2d_async(dst, N * 4, ui, N, 1, hStream);
}

CUresult cuMemsetD2D8_v2(CUdeviceptr dst, size_t dstPitch, unsigned char uc, size_t Width,
                         size_t Height) {
  return memset_2d(dst, dstPitch, uc, Width, Height);
}

CUresult cuMemsetD2D16_v2(CUdeviceptr dst, size_t dstPitch, unsigned short us, size_t Width,
                          size_t Height) {
  return memset_2d(dst, dstPitch, us, Width, Height);
}

CUresult cuMemsetD2D32_v2(CUdeviceptr dst, size_t dstPitch, unsigned int ui, size_t Width,
                          size_t Height) {
  return memset_2d(dst, dstPitch, ui, Width, Height);
}

CUresult cuMemsetD2D8Async(CUdeviceptr dst, size_t dstPitch, unsigned char uc, size_t Width,
                           size_t Height, CUstream hStream) {
  return memset_2d_async(dst, dstPitch, uc, Width, Height, hStream);
}

CUresult cuMemsetD2D16Async(CUdeviceptr dst, size_t dstPitch, unsigned short us, size_t Width,
                            size_t Height, CUstream hStream) {
  return memset_2d_async(dst, dstPitch, us, Width, Height, hStream);
}

CUresult cuMemsetD2D32Async(CUdeviceptr dst, size_t dstPitch, unsigned int ui, size_t Width,
                            size_t Height, CUstream hStream) {
  return memset_2d_async(dst, dstPitch, ui, Width, Height, hStream);
}

}  // extern "C"
