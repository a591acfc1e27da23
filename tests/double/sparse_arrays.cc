// cuMemMapArrayAsync for arrays created sparse or with deferred mapping:
// mapping a region of level 0 fills it with the physical memory's bytes
// from the given offset, read through its descriptor (the double's arrays
// own their bytes, so a mapping is a copy taken when it is made); unmapping
// zeroes it. The double has no mipmapped arrays.
#include <cuda.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>

#include "state.h"

using namespace scuda_double;

namespace {

constexpr unsigned kMappable = CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING;

// The region in the array's bytes: `rows` rows of `row` bytes, the first at
// `first`, one every `pitch` bytes (rows of a slice, then slices).
struct Region {
  size_t first, row, rows, height, pitch, slices;
};

bool region_of(const Array& a, const CUarrayMapInfo& m, Region* r) {
  const auto& l = m.subresource.sparseLevel;
  if (m.subresourceType != CU_ARRAY_SPARSE_SUBRESOURCE_TYPE_SPARSE_LEVEL || l.level != 0 ||
      l.layer != 0 || l.extentWidth == 0 || l.offsetX + l.extentWidth > a.desc.Width ||
      l.offsetY + std::max(l.extentHeight, 1u) > a.rows() ||
      l.offsetZ + std::max(l.extentDepth, 1u) > a.slices())
    return false;
  *r = {(l.offsetZ * a.rows() + l.offsetY) * a.row() + l.offsetX * a.element,
        l.extentWidth * a.element,
        std::max(l.extentHeight, 1u),
        a.rows(),
        a.row(),
        std::max(l.extentDepth, 1u)};
  return true;
}

// Copies the region from the physical memory's descriptor, or zeroes it.
bool fill(Array* a, const Region& r, const Physical* p, size_t offset) {
  if (p && offset + r.row * r.rows * r.slices > p->size) return false;
  for (size_t z = 0; z < r.slices; ++z)
    for (size_t y = 0; y < r.rows; ++y) {
      uint8_t* at = a->bytes.data() + r.first + (z * r.height + y) * r.pitch;
      if (!p) {
        std::fill_n(at, r.row, 0);
      } else if (pread(p->fd, at, r.row, offset) != static_cast<ssize_t>(r.row)) {
        return false;
      }
      offset += r.row;
    }
  return true;
}

CUresult map_one(const CUarrayMapInfo& m) {
  if (m.resourceType != CU_RESOURCE_TYPE_ARRAY) return CUDA_ERROR_NOT_SUPPORTED;
  Array* a = state().arrays.find(m.resource.array);
  if (a == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  Region r{};
  if (!(a->desc.Flags & kMappable) || !region_of(*a, m, &r) || m.deviceBitMask != 1)
    return CUDA_ERROR_INVALID_VALUE;
  const Physical* p = nullptr;
  if (m.memOperationType == CU_MEM_OPERATION_TYPE_MAP) {
    if (m.memHandleType != CU_MEM_HANDLE_TYPE_GENERIC) return CUDA_ERROR_INVALID_VALUE;
    p = state().physical.find(reinterpret_cast<void*>(m.memHandle.memHandle));
    if (p == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  } else if (m.memOperationType != CU_MEM_OPERATION_TYPE_UNMAP) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  return fill(a, r, p, m.offset) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // namespace

extern "C" {

CUresult cuMemMapArrayAsync(CUarrayMapInfo* mapInfoList, unsigned int count, CUstream hStream) {
  Call call = begin_on_stream(hStream);
  if (call.status != CUDA_SUCCESS) return call.status;
  if (count == 0 || mapInfoList == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < count; ++i)
    if (CUresult rc = map_one(mapInfoList[i]); rc != CUDA_SUCCESS) return rc;
  return CUDA_SUCCESS;
}

}  // extern "C"
