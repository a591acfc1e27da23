// Texture and surface objects. Resource descriptors arrive with arrays named
// by client ids and go back the same way; device pointers pass as they are.
#include "protocol/op_layouts.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"
#include "server/session/typed_handler.h"

namespace scuda::server {

namespace {

namespace op = protocol::op;

// Maps the descriptor's array handle between client ids and the driver's
// handles, either way. False for an id the session does not hold, or a
// resource type CUDA lacks.
bool resolve_resource(Session& s, CUDA_RESOURCE_DESC* r) {
  void* real = nullptr;
  switch (r->resType) {
    case CU_RESOURCE_TYPE_ARRAY:
      if (!s.handles().resolve(reinterpret_cast<uintptr_t>(r->res.array.hArray),
                               HandleKind::CUarray, &real))
        return false;
      r->res.array.hArray = static_cast<CUarray>(real);
      return true;
    case CU_RESOURCE_TYPE_MIPMAPPED_ARRAY:
      if (!s.handles().resolve(reinterpret_cast<uintptr_t>(r->res.mipmap.hMipmappedArray),
                               HandleKind::CUmipmappedArray, &real))
        return false;
      r->res.mipmap.hMipmappedArray = static_cast<CUmipmappedArray>(real);
      return true;
    case CU_RESOURCE_TYPE_LINEAR:
    case CU_RESOURCE_TYPE_PITCH2D: return true;
  }
  return false;
}

void to_client_ids(Session& s, CUDA_RESOURCE_DESC* r) {
  if (r->resType == CU_RESOURCE_TYPE_ARRAY)
    r->res.array.hArray = reinterpret_cast<CUarray>(s.handles().find(r->res.array.hArray));
  if (r->resType == CU_RESOURCE_TYPE_MIPMAPPED_ARRAY)
    r->res.mipmap.hMipmappedArray =
        reinterpret_cast<CUmipmappedArray>(s.handles().find(r->res.mipmap.hMipmappedArray));
}

CUresult tex_object_create(Session& s, const op::TexObjectCreate::Request& q, op::ObjectValue* a) {
  CUDA_RESOURCE_DESC res = q.resource;
  if (!resolve_resource(s, &res)) return CUDA_ERROR_INVALID_HANDLE;
  if (!s.driver().cuTexObjectCreate) return CUDA_ERROR_NOT_SUPPORTED;
  CUtexObject object = 0;
  const CUresult rc =
      s.driver().cuTexObjectCreate(&object, &res, &q.texture, q.view ? &*q.view : nullptr);
  a->object = object;
  return rc;
}

CUresult surf_object_create(Session& s, const op::SurfObjectCreate::Request& q,
                            op::ObjectValue* a) {
  CUDA_RESOURCE_DESC res = q.resource;
  if (!resolve_resource(s, &res)) return CUDA_ERROR_INVALID_HANDLE;
  if (!s.driver().cuSurfObjectCreate) return CUDA_ERROR_NOT_SUPPORTED;
  CUsurfObject object = 0;
  const CUresult rc = s.driver().cuSurfObjectCreate(&object, &res);
  a->object = object;
  return rc;
}

CUresult resource_desc(Session& s, const op::ResourceDesc::Request& q, op::ResourceDesc::Reply* a) {
  if (q.owner > protocol::kSurfaceObject) return kMalformed;
  const DriverTable& d = s.driver();
  auto get = q.owner == protocol::kTextureObject ? d.cuTexObjectGetResourceDesc
                                                 : d.cuSurfObjectGetResourceDesc;
  if (!get) return CUDA_ERROR_NOT_SUPPORTED;
  const CUresult rc = get(&a->resource, q.object);
  if (rc == CUDA_SUCCESS) to_client_ids(s, &a->resource);
  return rc;
}

const HandlerEntry kHandlers[] = {
    typed_entry<op::TexObjectCreate, tex_object_create>(),
    typed_entry<op::SurfObjectCreate, surf_object_create>(),
    typed_entry<op::ResourceDesc, resource_desc>(),
};

}  // namespace

std::span<const HandlerEntry> resource_object_handlers() { return kHandlers; }

}  // namespace scuda::server
