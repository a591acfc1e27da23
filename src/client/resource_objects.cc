// Texture and surface objects. Their resource descriptors name arrays by
// handle, and the client's handles are its ids already, so the descriptors
// travel as they are and the server maps the ids. The objects themselves
// are plain values that kernels use on the GPU: the server's own.
#include "client/runtime.h"
#include "custom.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

CUresult create(uint32_t op, const protocol::Writer& w, unsigned long long* object,
                const char* name) {
  std::vector<uint8_t> reply;
  CUresult rc = call(op, w, &reply);
  if (rc != CUDA_SUCCESS) return rc;
  protocol::Reader r(reply);
  *object = r.u64();
  return r.done() ? CUDA_SUCCESS : bad_reply(name);
}

CUresult tex_object_create(CUtexObject* object, const CUDA_RESOURCE_DESC* res,
                           const CUDA_TEXTURE_DESC* tex, const CUDA_RESOURCE_VIEW_DESC* view) {
  if (!object || !res || !tex) return CUDA_ERROR_INVALID_VALUE;
  protocol::Writer w;
  w.put(*res);
  w.put(*tex);
  w.u8(view != nullptr);
  if (view) w.put(*view);
  return create(protocol::kOpTexObjectCreate, w, object, "cuTexObjectCreate");
}

CUresult surf_object_create(CUsurfObject* object, const CUDA_RESOURCE_DESC* res) {
  if (!object || !res) return CUDA_ERROR_INVALID_VALUE;
  protocol::Writer w;
  w.put(*res);
  return create(protocol::kOpSurfObjectCreate, w, object, "cuSurfObjectCreate");
}

CUresult resource_desc(protocol::ResourceOwner owner, CUDA_RESOURCE_DESC* res,
                       unsigned long long object, const char* name) {
  if (!res) return CUDA_ERROR_INVALID_VALUE;
  protocol::Writer w;
  w.u8(owner);
  w.u64(object);
  std::vector<uint8_t> reply;
  CUresult rc = call(protocol::kOpResourceDesc, w, &reply);
  if (rc != CUDA_SUCCESS) return rc;
  protocol::Reader r(reply);
  const auto desc = r.get<CUDA_RESOURCE_DESC>();
  if (!r.done()) return bad_reply(name);
  *res = desc;
  return CUDA_SUCCESS;
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
  return resource_desc(scuda::protocol::kTextureObject, res, object, "cuTexObjectGetResourceDesc");
}

CUresult scuda::client::custom::cuSurfObjectGetResourceDesc(CUDA_RESOURCE_DESC* res,
                                                            CUsurfObject object) {
  return resource_desc(scuda::protocol::kSurfaceObject, res, object, "cuSurfObjectGetResourceDesc");
}
