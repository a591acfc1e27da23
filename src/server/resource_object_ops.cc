// Texture and surface objects. Resource descriptors arrive with arrays named
// by client ids and go back the same way; device pointers pass as they are.
#include "protocol/ops.h"
#include "server/dispatch.h"
#include "server/session.h"

namespace scuda::server {

namespace {

using protocol::Reader;
using protocol::Writer;

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

// A resource descriptor, a texture descriptor, and an optional view.
CUresult tex_object_create(Session& s, Reader& in, Writer& out) {
  auto res = in.get<CUDA_RESOURCE_DESC>();
  const auto tex = in.get<CUDA_TEXTURE_DESC>();
  const bool has_view = in.boolean();
  const auto view = has_view ? in.get<CUDA_RESOURCE_VIEW_DESC>() : CUDA_RESOURCE_VIEW_DESC{};
  if (!in.done()) return kMalformed;
  if (!resolve_resource(s, &res)) return CUDA_ERROR_INVALID_HANDLE;
  if (!s.driver().cuTexObjectCreate) return CUDA_ERROR_NOT_SUPPORTED;
  CUtexObject object = 0;
  CUresult rc = s.driver().cuTexObjectCreate(&object, &res, &tex, has_view ? &view : nullptr);
  if (rc == CUDA_SUCCESS) out.u64(object);
  return rc;
}

CUresult surf_object_create(Session& s, Reader& in, Writer& out) {
  auto res = in.get<CUDA_RESOURCE_DESC>();
  if (!in.done()) return kMalformed;
  if (!resolve_resource(s, &res)) return CUDA_ERROR_INVALID_HANDLE;
  if (!s.driver().cuSurfObjectCreate) return CUDA_ERROR_NOT_SUPPORTED;
  CUsurfObject object = 0;
  CUresult rc = s.driver().cuSurfObjectCreate(&object, &res);
  if (rc == CUDA_SUCCESS) out.u64(object);
  return rc;
}

// u8 owner (protocol::ResourceOwner), u64 object.
CUresult resource_desc(Session& s, Reader& in, Writer& out) {
  const uint8_t owner = in.u8();
  const uint64_t object = in.u64();
  if (!in.done() || owner > protocol::kSurfaceObject) return kMalformed;
  const DriverTable& d = s.driver();
  auto get = owner == protocol::kTextureObject ? d.cuTexObjectGetResourceDesc
                                               : d.cuSurfObjectGetResourceDesc;
  if (!get) return CUDA_ERROR_NOT_SUPPORTED;
  CUDA_RESOURCE_DESC res{};
  CUresult rc = get(&res, object);
  if (rc != CUDA_SUCCESS) return rc;
  to_client_ids(s, &res);
  out.put(res);
  return rc;
}

const HandlerEntry kHandlers[] = {
    {protocol::kOpTexObjectCreate, tex_object_create},
    {protocol::kOpSurfObjectCreate, surf_object_create},
    {protocol::kOpResourceDesc, resource_desc},
};

}  // namespace

std::span<const HandlerEntry> resource_object_handlers() { return kHandlers; }

}  // namespace scuda::server
