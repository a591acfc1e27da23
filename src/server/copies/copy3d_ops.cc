// 2D/3D copies (kOpMemcpy3D; protocol/copy_desc.h). A host side arrives
// packed: the source's rows as the request's blob, or room for the
// destination's rows in the reply. Either is staged here, W x H x D bytes
// with no padding, and the driver runs the real copy against it.
#include "protocol/copy_desc.h"
#include "protocol/frame.h"
#include "protocol/op_layouts.h"
#include "protocol/ops.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"

namespace scuda::server {

namespace {

using protocol::Reader;
using protocol::Writer;
namespace op = protocol::op;

bool known_type(CUmemorytype t) {
  return t == CU_MEMORYTYPE_HOST || t == CU_MEMORYTYPE_DEVICE || t == CU_MEMORYTYPE_ARRAY;
}

// The staged bytes of a host side, or false when the extent is too large
// to stage (a client chunks its copies to kChunkSize).
bool staged_size(const CUDA_MEMCPY3D_PEER& c, uint64_t* bytes) {
  const uint64_t limit = protocol::kChunkSize;
  if (c.WidthInBytes > limit || c.Height > limit || c.Depth > limit) return false;
  *bytes = uint64_t{c.WidthInBytes} * c.Height;
  if (*bytes > limit) return false;
  *bytes *= c.Depth;
  return *bytes <= limit;
}

// The shape's own rules: which sides may be host, and how many dimensions.
bool shape_fits(uint8_t shape, const CUDA_MEMCPY3D_PEER& c, bool async) {
  const bool src_host = c.srcMemoryType == CU_MEMORYTYPE_HOST;
  const bool dst_host = c.dstMemoryType == CU_MEMORYTYPE_HOST;
  switch (shape) {
    case protocol::kShape2D: return c.Depth == 1;
    case protocol::kShape2DUnaligned: return c.Depth == 1 && !async;
    case protocol::kShape3D:
    case protocol::kShape3DPeer: return true;
    case protocol::kShapeHtoA:
      return src_host && c.dstMemoryType == CU_MEMORYTYPE_ARRAY && c.Height == 1 && c.Depth == 1;
    case protocol::kShapeAtoH:
      return dst_host && c.srcMemoryType == CU_MEMORYTYPE_ARRAY && c.Height == 1 && c.Depth == 1;
  }
  return false;
}

// Arrays and contexts arrive as client ids: maps a side's, or says what is
// wrong with them. A side that is not an array has no array, whatever the
// field held, as the driver reads it.
CUresult resolve_handles(Session& s, CUmemorytype type, CUarray* array, CUcontext* context) {
  void* real = nullptr;
  if (type != CU_MEMORYTYPE_ARRAY) *array = nullptr;
  else if (!s.handles().resolve(reinterpret_cast<uintptr_t>(*array), HandleKind::CUarray, &real))
    return CUDA_ERROR_INVALID_HANDLE;
  else *array = static_cast<CUarray>(real);
  if (!s.handles().resolve(reinterpret_cast<uintptr_t>(*context), HandleKind::CUcontext, &real))
    return CUDA_ERROR_INVALID_CONTEXT;
  *context = static_cast<CUcontext>(real);
  return CUDA_SUCCESS;
}

// True when the copy is one the shape allows, with at most one host side
// whose bytes, if it is the source, are all there; *bytes is its staged size.
bool well_formed(uint8_t shape, uint8_t mode, const CUDA_MEMCPY3D_PEER& c, std::string_view data,
                 uint64_t* bytes) {
  const bool src_host = c.srcMemoryType == CU_MEMORYTYPE_HOST;
  const bool dst_host = c.dstMemoryType == CU_MEMORYTYPE_HOST;
  if (shape >= protocol::kShapeCount || !known_type(c.srcMemoryType) ||
      !known_type(c.dstMemoryType) || (src_host && dst_host) ||
      !shape_fits(shape, c, mode & protocol::kCopyAsync))
    return false;
  if (!src_host && !data.empty()) return false;  // bytes for no host source
  if (!src_host && !dst_host) return true;
  return staged_size(c, bytes) && (!src_host || data.size() == *bytes);
}

// Calls the synchronous or the async entry point, whichever the mode asks.
template <class Desc, class Sync, class Async>
CUresult run(const Desc& desc, Sync sync, Async async, bool is_async, CUstream stream) {
  if (is_async) return async ? async(&desc, stream) : CUDA_ERROR_NOT_SUPPORTED;
  return sync ? sync(&desc) : CUDA_ERROR_NOT_SUPPORTED;
}

CUresult run_shape(const DriverTable& d, uint8_t shape, const CUDA_MEMCPY3D_PEER& c, uint8_t mode,
                   CUstream stream) {
  const bool pt = mode & protocol::kCopyPerThread;
  const bool async = mode & protocol::kCopyAsync;
  switch (shape) {
    case protocol::kShape2D:
      return run(protocol::as_2d(c), pt ? d.cuMemcpy2D_v2_ptds : d.cuMemcpy2D_v2,
                 pt ? d.cuMemcpy2DAsync_v2_ptsz : d.cuMemcpy2DAsync_v2, async, stream);
    case protocol::kShape2DUnaligned: {
      auto fn = pt ? d.cuMemcpy2DUnaligned_v2_ptds : d.cuMemcpy2DUnaligned_v2;
      const CUDA_MEMCPY2D m = protocol::as_2d(c);
      return fn ? fn(&m) : CUDA_ERROR_NOT_SUPPORTED;
    }
    case protocol::kShape3D:
      return run(protocol::as_3d(c), pt ? d.cuMemcpy3D_v2_ptds : d.cuMemcpy3D_v2,
                 pt ? d.cuMemcpy3DAsync_v2_ptsz : d.cuMemcpy3DAsync_v2, async, stream);
    case protocol::kShape3DPeer:
      return run(c, pt ? d.cuMemcpy3DPeer_ptds : d.cuMemcpy3DPeer,
                 pt ? d.cuMemcpy3DPeerAsync_ptsz : d.cuMemcpy3DPeerAsync, async, stream);
    case protocol::kShapeHtoA: {
      if (async) {
        auto fn = pt ? d.cuMemcpyHtoAAsync_v2_ptsz : d.cuMemcpyHtoAAsync_v2;
        return fn ? fn(c.dstArray, c.dstXInBytes, c.srcHost, c.WidthInBytes, stream)
                  : CUDA_ERROR_NOT_SUPPORTED;
      }
      auto fn = pt ? d.cuMemcpyHtoA_v2_ptds : d.cuMemcpyHtoA_v2;
      return fn ? fn(c.dstArray, c.dstXInBytes, c.srcHost, c.WidthInBytes)
                : CUDA_ERROR_NOT_SUPPORTED;
    }
    case protocol::kShapeAtoH: {
      if (async) {
        auto fn = pt ? d.cuMemcpyAtoHAsync_v2_ptsz : d.cuMemcpyAtoHAsync_v2;
        return fn ? fn(c.dstHost, c.srcArray, c.srcXInBytes, c.WidthInBytes, stream)
                  : CUDA_ERROR_NOT_SUPPORTED;
      }
      auto fn = pt ? d.cuMemcpyAtoH_v2_ptds : d.cuMemcpyAtoH_v2;
      return fn ? fn(c.dstHost, c.srcArray, c.srcXInBytes, c.WidthInBytes)
                : CUDA_ERROR_NOT_SUPPORTED;
    }
  }
  return CUDA_ERROR_INVALID_VALUE;
}

// A host side is staged as W x H x D bytes with no padding.
void stage_host_sides(CUDA_MEMCPY3D_PEER& c) {
  if (c.srcMemoryType == CU_MEMORYTYPE_HOST) {
    c.srcXInBytes = c.srcY = c.srcZ = 0;
    c.srcPitch = c.WidthInBytes;
    c.srcHeight = c.Height;
  }
  if (c.dstMemoryType == CU_MEMORYTYPE_HOST) {
    c.dstXInBytes = c.dstY = c.dstZ = 0;
    c.dstPitch = c.WidthInBytes;
    c.dstHeight = c.Height;
  }
}

// op::Memcpy3D; the reply carries the destination's bytes when it is host
// memory, written straight into `out` by the driver.
CUresult copy_3d(Session& s, Reader& in, Writer& out) {
  op::Memcpy3D::Request q;
  if (!protocol::read(in, &q)) return kMalformed;
  CUDA_MEMCPY3D_PEER c = protocol::from_desc(q.desc);
  const bool src_host = c.srcMemoryType == CU_MEMORYTYPE_HOST;
  const bool dst_host = c.dstMemoryType == CU_MEMORYTYPE_HOST;
  const uint8_t shape = q.shape;
  const uint8_t mode = q.mode;
  uint64_t bytes = 0;
  if (!well_formed(shape, mode, c, q.data, &bytes)) return kMalformed;
  const std::string_view data = q.data;
  void* stream = nullptr;
  if (!s.handles().resolve(q.stream, HandleKind::CUstream, &stream))
    return CUDA_ERROR_INVALID_HANDLE;
  CUresult rc = resolve_handles(s, c.srcMemoryType, &c.srcArray, &c.srcContext);
  if (rc == CUDA_SUCCESS) rc = resolve_handles(s, c.dstMemoryType, &c.dstArray, &c.dstContext);
  if (rc != CUDA_SUCCESS) return rc;
  stage_host_sides(c);
  if (src_host) c.srcHost = data.data();
  if (dst_host) {
    out.data().resize(bytes);
    c.dstHost = out.data().data();
  }
  rc = run_shape(s.driver(), shape, c, mode, static_cast<CUstream>(stream));
  if (rc != CUDA_SUCCESS) out.clear();
  return rc;
}

const HandlerEntry kHandlers[] = {
    {protocol::kOpMemcpy3D, copy_3d},
};

}  // namespace

std::span<const HandlerEntry> copy3d_handlers() { return kHandlers; }

}  // namespace scuda::server
