// CUDA arrays the client created, with their extents in bytes, so that a
// copy into an array it fits in needs no answer (copies_3d.cc), as a copy
// into a known allocation does.
#include <map>
#include <mutex>

#include "client/memory/memory.h"
#include "client/runtime.h"
#include "client/state.h"
#include "common/array_formats.h"
#include "common/lock_order.h"
#include "custom.h"
#include "forward.h"

namespace scuda::client {

namespace {

struct Extent {
  size_t row;  // bytes
  size_t rows;
  size_t slices;
  size_t element;  // bytes
};

}  // namespace

namespace parts {

struct Arrays {
  RankedMutex mu{LockRank::kLeaf, "Arrays::mu"};
  std::map<CUarray, Extent> extents;
};

}  // namespace parts

namespace {

parts::Arrays& arrays() { return client_state().arrays.get(); }

void note_array(CUarray a, const CUDA_ARRAY3D_DESCRIPTOR& d) {
  const size_t element = format_element_bytes(d.Format, d.NumChannels);
  if (!element) return;
  std::lock_guard lock(arrays().mu);
  arrays().extents[a] = {d.Width * element, d.Height ? d.Height : 1, d.Depth ? d.Depth : 1,
                         element};
}

void forget_array(CUarray a) {
  std::lock_guard lock(arrays().mu);
  arrays().extents.erase(a);
}

}  // namespace

bool array_holds(CUarray a, size_t x, size_t y, size_t z, size_t w, size_t h, size_t d) {
  std::lock_guard lock(arrays().mu);
  auto it = arrays().extents.find(a);
  if (it == arrays().extents.end()) return false;
  const Extent& e = it->second;
  return x <= e.row && w <= e.row - x && y <= e.rows && h <= e.rows - y && z <= e.slices &&
         d <= e.slices - z;
}

size_t array_element_bytes(CUarray a) {
  {
    std::lock_guard lock(arrays().mu);
    auto it = arrays().extents.find(a);
    if (it != arrays().extents.end()) return it->second.element;
  }
  CUDA_ARRAY3D_DESCRIPTOR d{};
  if (cuArray3DGetDescriptor_v2(&d, a) != CUDA_SUCCESS) return 0;
  return format_element_bytes(d.Format, d.NumChannels);
}

}  // namespace scuda::client

using namespace scuda::client;

CUresult scuda::client::custom::cuArrayCreate_v2(CUarray* handle,
                                                 const CUDA_ARRAY_DESCRIPTOR* desc) {
  CUresult rc = forward::cuArrayCreate_v2(handle, desc);
  if (rc == CUDA_SUCCESS && handle && desc)
    note_array(*handle, {desc->Width, desc->Height, 0, desc->Format, desc->NumChannels, 0});
  return rc;
}

CUresult scuda::client::custom::cuArray3DCreate_v2(CUarray* handle,
                                                   const CUDA_ARRAY3D_DESCRIPTOR* desc) {
  CUresult rc = forward::cuArray3DCreate_v2(handle, desc);
  if (rc == CUDA_SUCCESS && handle && desc) note_array(*handle, *desc);
  return rc;
}

CUresult scuda::client::custom::cuArrayDestroy(CUarray handle) {
  forget_array(handle);
  return forward::cuArrayDestroy(handle);
}
