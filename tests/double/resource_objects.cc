// Texture and surface objects: recorded as created, so that a test can read
// back what reached the driver. Their values are registry ids.
#include <cuda.h>

#include <memory>

#include "allocations.h"
#include "state.h"

using namespace scuda_double;

namespace {

CUresult check_resource(const CUDA_RESOURCE_DESC* res) {
  if (res == nullptr) return CUDA_ERROR_INVALID_VALUE;
  switch (res->resType) {
    case CU_RESOURCE_TYPE_ARRAY:
      return state().arrays.find(res->res.array.hArray) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
    case CU_RESOURCE_TYPE_LINEAR:
      return device_range(res->res.linear.devPtr, res->res.linear.sizeInBytes)
                 ? CUDA_SUCCESS
                 : CUDA_ERROR_INVALID_VALUE;
    case CU_RESOURCE_TYPE_PITCH2D: {
      const auto& p = res->res.pitch2D;
      return p.height && device_range(p.devPtr, p.pitchInBytes * p.height)
                 ? CUDA_SUCCESS
                 : CUDA_ERROR_INVALID_VALUE;
    }
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult add(std::unique_ptr<ResourceObject> object, unsigned long long* out) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = check_resource(&object->res); rc != CUDA_SUCCESS) return rc;
  *out = state().objects.add(std::move(object));
  return CUDA_SUCCESS;
}

const ResourceObject* find(unsigned long long value, bool surface) {
  const ResourceObject* o = state().objects.find(static_cast<uintptr_t>(value));
  return o && o->surface == surface ? o : nullptr;
}

}  // namespace

extern "C" {

CUresult cuTexObjectCreate(CUtexObject* out, const CUDA_RESOURCE_DESC* res,
                           const CUDA_TEXTURE_DESC* tex, const CUDA_RESOURCE_VIEW_DESC* view) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (res == nullptr || tex == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto object = std::make_unique<ResourceObject>();
  object->res = *res;
  object->tex = *tex;
  object->has_view = view != nullptr;
  if (view) object->view = *view;
  return add(std::move(object), out);
}

CUresult cuSurfObjectCreate(CUsurfObject* out, const CUDA_RESOURCE_DESC* res) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (res == nullptr) return CUDA_ERROR_INVALID_VALUE;
  auto object = std::make_unique<ResourceObject>();
  object->surface = true;
  object->res = *res;
  return add(std::move(object), out);
}

CUresult cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC* res, CUtexObject value) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  const ResourceObject* o = find(value, false);
  if (o == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (res == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *res = o->res;
  return CUDA_SUCCESS;
}

CUresult cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC* res, CUsurfObject value) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  const ResourceObject* o = find(value, true);
  if (o == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (res == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *res = o->res;
  return CUDA_SUCCESS;
}

CUresult cuTexObjectGetTextureDesc(CUDA_TEXTURE_DESC* tex, CUtexObject value) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  const ResourceObject* o = find(value, false);
  if (o == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (tex == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *tex = o->tex;
  return CUDA_SUCCESS;
}

CUresult cuTexObjectGetResourceViewDesc(CUDA_RESOURCE_VIEW_DESC* view, CUtexObject value) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  const ResourceObject* o = find(value, false);
  if (o == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (view == nullptr || !o->has_view) return CUDA_ERROR_INVALID_VALUE;
  *view = o->view;
  return CUDA_SUCCESS;
}

CUresult cuTexObjectDestroy(CUtexObject value) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (!find(value, false)) return CUDA_ERROR_INVALID_HANDLE;
  state().objects.erase(static_cast<uintptr_t>(value));
  return CUDA_SUCCESS;
}

CUresult cuSurfObjectDestroy(CUsurfObject value) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (!find(value, true)) return CUDA_ERROR_INVALID_HANDLE;
  state().objects.erase(static_cast<uintptr_t>(value));
  return CUDA_SUCCESS;
}

}  // extern "C"
