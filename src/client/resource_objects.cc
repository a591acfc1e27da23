// Texture and surface objects. Their resource descriptors name arrays by
// handle, and the client's handles are its ids already, so the descriptors
// travel as they are and the server maps the ids. The objects themselves
// are plain values that kernels use on the GPU: the server's own.
#include "client/op_calls.h"
#include "client/runtime.h"
#include "custom.h"
#include "protocol/op_layouts.h"

namespace scuda::client {

namespace {

namespace op = protocol::op;

CUresult tex_object_create(CUtexObject* object, const CUDA_RESOURCE_DESC* res,
                           const CUDA_TEXTURE_DESC* tex, const CUDA_RESOURCE_VIEW_DESC* view) {
  if (!object || !res || !tex) return CUDA_ERROR_INVALID_VALUE;
  op::TexObjectCreate::Request request{*res, *tex, std::nullopt};
  if (view) request.view = *view;
  op::ObjectValue created;
  const CUresult rc = ask<op::TexObjectCreate>(request, &created);
  if (rc == CUDA_SUCCESS) *object = created.object;
  return rc;
}

CUresult surf_object_create(CUsurfObject* object, const CUDA_RESOURCE_DESC* res) {
  if (!object || !res) return CUDA_ERROR_INVALID_VALUE;
  op::ObjectValue created;
  const CUresult rc = ask<op::SurfObjectCreate>({*res}, &created);
  if (rc == CUDA_SUCCESS) *object = created.object;
  return rc;
}

CUresult resource_desc(protocol::ResourceOwner owner, CUDA_RESOURCE_DESC* res,
                       unsigned long long object) {
  if (!res) return CUDA_ERROR_INVALID_VALUE;
  op::ResourceDesc::Reply reply;
  const CUresult rc = ask<op::ResourceDesc>({owner, object}, &reply);
  if (rc == CUDA_SUCCESS) *res = reply.resource;
  return rc;
}

}  // namespace

}  // namespace scuda::client

using namespace scuda::client;

CUresult scuda::client::custom::cuTexObjectCreate(CUtexObject* object,
                                                  const CUDA_RESOURCE_DESC* res,
                                                  const CUDA_TEXTURE_DESC* tex,
                                                  const CUDA_RESOURCE_VIEW_DESC* view) {
  return tex_object_create(object, res, tex, view);
}

CUresult scuda::client::custom::cuSurfObjectCreate(CUsurfObject* object,
                                                   const CUDA_RESOURCE_DESC* res) {
  return surf_object_create(object, res);
}

CUresult scuda::client::custom::cuTexObjectGetResourceDesc(CUDA_RESOURCE_DESC* res,
                                                           CUtexObject object) {
  return resource_desc(scuda::protocol::kTextureObject, res, object);
}

CUresult scuda::client::custom::cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC* res,
                                                            CUsurfObject object) {
  return resource_desc(scuda::protocol::kSurfaceObject, res, object);
}
