// 2D/3D copies and copies to and from arrays. Each side is host memory,
// "device" memory (inside one live allocation) or an array; async variants
// run immediately.
#include <cuda.h>

#include <cstring>

#include "allocations.h"
#include "state.h"

using namespace scuda_double;

namespace {

struct Side {
  CUmemorytype type;
  const void* host;
  CUdeviceptr device;
  CUarray array;
  size_t x, y, z, pitch, height;
};

// The first byte a side's copy touches and the layout of its rows.
struct Region {
  uint8_t* origin = nullptr;
  size_t pitch = 0;
  size_t slice = 0;
};

CUresult array_region(const Side& s, size_t w, size_t h, size_t d, Region* out) {
  Array* a = state().arrays.find(s.array);
  if (a == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (s.x + w > a->row() || s.y + h > a->rows() || s.z + d > a->slices())
    return CUDA_ERROR_INVALID_VALUE;
  out->pitch = a->row();
  out->slice = a->row() * a->rows();
  out->origin = a->bytes.data() + s.z * out->slice + s.y * out->pitch + s.x;
  return CUDA_SUCCESS;
}

CUresult region(const Side& s, size_t w, size_t h, size_t d, Region* out) {
  CUmemorytype type = s.type;
  if (type == CU_MEMORYTYPE_UNIFIED)
    type = allocation_base(s.device) ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
  if (type == CU_MEMORYTYPE_ARRAY) return array_region(s, w, h, d, out);
  if (type != CU_MEMORYTYPE_HOST && type != CU_MEMORYTYPE_DEVICE) return CUDA_ERROR_INVALID_VALUE;
  const uintptr_t base =
      s.type == CU_MEMORYTYPE_HOST ? reinterpret_cast<uintptr_t>(s.host) : s.device;
  if (base == 0 || s.pitch < s.x + w || (d > 1 && s.height < s.y + h))
    return CUDA_ERROR_INVALID_VALUE;
  out->pitch = s.pitch;
  out->slice = s.pitch * s.height;
  const uintptr_t origin = base + s.z * out->slice + s.y * s.pitch + s.x;
  out->origin = reinterpret_cast<uint8_t*>(origin);
  const size_t span = (d - 1) * out->slice + (h - 1) * out->pitch + w;
  if (type == CU_MEMORYTYPE_DEVICE && !device_range(origin, span)) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult copy_box(const Side& src, const Side& dst, size_t w, size_t h, size_t d) {
  if (w == 0 || h == 0 || d == 0) return CUDA_SUCCESS;
  Region from, to;
  if (CUresult rc = region(src, w, h, d, &from); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = region(dst, w, h, d, &to); rc != CUDA_SUCCESS) return rc;
  for (size_t z = 0; z < d; ++z)
    for (size_t y = 0; y < h; ++y)
      std::memmove(to.origin + z * to.slice + y * to.pitch,
                   from.origin + z * from.slice + y * from.pitch, w);
  return CUDA_SUCCESS;
}

CUresult copy_2d(const CUDA_MEMCPY2D* c) {
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const Side src{
      c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, c->srcXInBytes, c->srcY, 0,
      c->srcPitch,      0};
  const Side dst{
      c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, c->dstXInBytes, c->dstY, 0,
      c->dstPitch,      0};
  return copy_box(src, dst, c->WidthInBytes, c->Height, 1);
}

template <class Desc>
CUresult copy_3d(const Desc* c) {
  if (c == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const Side src{c->srcMemoryType, c->srcHost, c->srcDevice, c->srcArray, c->srcXInBytes,
                 c->srcY,          c->srcZ,    c->srcPitch,  c->srcHeight};
  const Side dst{c->dstMemoryType, c->dstHost, c->dstDevice, c->dstArray, c->dstXInBytes,
                 c->dstY,          c->dstZ,    c->dstPitch,  c->dstHeight};
  return copy_box(src, dst, c->WidthInBytes, c->Height, c->Depth);
}

// The 1D array copies: a byte range of the array's packed rows.
CUresult array_bytes(CUarray handle, size_t offset, size_t n, uint8_t** out) {
  Array* a = state().arrays.find(handle);
  if (a == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (offset > a->bytes.size() || n > a->bytes.size() - offset) return CUDA_ERROR_INVALID_VALUE;
  *out = a->bytes.data() + offset;
  return CUDA_SUCCESS;
}

CUresult linear(CUarray array, size_t offset, void* other, bool into_array, size_t n) {
  uint8_t* bytes = nullptr;
  if (CUresult rc = array_bytes(array, offset, n, &bytes); rc != CUDA_SUCCESS) return rc;
  if (n && other == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (into_array) std::memmove(bytes, other, n);
  else std::memmove(other, bytes, n);
  return CUDA_SUCCESS;
}

void* device(CUdeviceptr p, size_t n) {
  return device_range(p, n) ? reinterpret_cast<void*>(p) : nullptr;
}

}  // namespace

extern "C" {

CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D* c) {
  Call call = begin_in_context();
  return call.status != CUDA_SUCCESS ? call.status : copy_2d(c);
}

CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D* c) {
  Call call = begin_in_context();
  return call.status != CUDA_SUCCESS ? call.status : copy_2d(c);
}

CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D* c, CUstream stream) {
  Call call = begin_on_stream(stream);
  return call.status != CUDA_SUCCESS ? call.status : copy_2d(c);
}

CUresult cuMemcpy3D_v2(const CUDA_MEMCPY3D* c) {
  Call call = begin_in_context();
  return call.status != CUDA_SUCCESS ? call.status : copy_3d(c);
}

CUresult cuMemcpy3DAsync_v2(const CUDA_MEMCPY3D* c, CUstream stream) {
  Call call = begin_on_stream(stream);
  return call.status != CUDA_SUCCESS ? call.status : copy_3d(c);
}

CUresult cuMemcpy3DPeer(const CUDA_MEMCPY3D_PEER* c) {
  Call call = begin_in_context();
  return call.status != CUDA_SUCCESS ? call.status : copy_3d(c);
}

CUresult cuMemcpyHtoA_v2(CUarray dst, size_t offset, const void* src, size_t n) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  return linear(dst, offset, const_cast<void*>(src), true, n);
}

CUresult cuMemcpyHtoAAsync_v2(CUarray dst, size_t offset, const void* src, size_t n,
                              CUstream stream) {
  Call call = begin_on_stream(stream);
  if (call.status != CUDA_SUCCESS) return call.status;
  return linear(dst, offset, const_cast<void*>(src), true, n);
}

CUresult cuMemcpyAtoH_v2(void* dst, CUarray src, size_t offset, size_t n) {
  Call call = begin_in_context();
  return call.status != CUDA_SUCCESS ? call.status : linear(src, offset, dst, false, n);
}

CUresult cuMemcpyAtoHAsync_v2(void* dst, CUarray src, size_t offset, size_t n, CUstream stream) {
  Call call = begin_on_stream(stream);
  return call.status != CUDA_SUCCESS ? call.status : linear(src, offset, dst, false, n);
}

CUresult cuMemcpyDtoA_v2(CUarray dst, size_t offset, CUdeviceptr src, size_t n) {
  Call call = begin_in_context();
  return call.status != CUDA_SUCCESS ? call.status : linear(dst, offset, device(src, n), true, n);
}

CUresult cuMemcpyAtoD_v2(CUdeviceptr dst, CUarray src, size_t offset, size_t n) {
  Call call = begin_in_context();
  return call.status != CUDA_SUCCESS ? call.status : linear(src, offset, device(dst, n), false, n);
}

CUresult cuMemcpyAtoA_v2(CUarray dst, size_t dst_offset, CUarray src, size_t src_offset, size_t n) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  uint8_t* from = nullptr;
  if (CUresult rc = array_bytes(src, src_offset, n, &from); rc != CUDA_SUCCESS) return rc;
  return linear(dst, dst_offset, from, true, n);
}

}  // extern "C"
