#include "client/graphs/graph_node_params.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "client/contexts/context.h"
#include "client/kernels/kernel_arguments.h"
#include "client/memory/memory.h"
#include "client/memory/registered_memory.h"
#include "client/runtime.h"
#include "client/streams/host_callbacks.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

constexpr unsigned kMaxBodies = 1024;

CUresult refuse(const char* what) {
  spdlog::error("graph node not supported through scuda: {}", what);
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult write_kernel(protocol::Writer& w, CUgraphNodeParams p) {
  CUDA_KERNEL_NODE_PARAMS_v3& k = p.kernel;
  const uint64_t fn = k.func ? handle_id(k.func) : handle_id(k.kern);
  void** params = k.kernelParams;
  void** extra = k.extra;
  k.kernelParams = nullptr;
  k.extra = nullptr;
  w.put(p);
  return pack_arguments(fn, params, extra, w);
}

// One side of a 3D copy, as the fields that place it.
struct Side {
  CUmemorytype* type;
  CUdeviceptr* device;
  const void* host;
  size_t x, y, z, pitch, height;
};

// The server's driver can reach only device memory: client host memory
// crosses through a mirror in the session (registered_memory.h), which the
// node names by its device address instead. The mirror is pushed before
// each launch and pulled after the next synchronization, as registered
// memory is.
CUresult device_side(Side s, const CUDA_MEMCPY3D& c) {
  if (*s.type == CU_MEMORYTYPE_UNIFIED && is_device_address(reinterpret_cast<void*>(*s.device)))
    *s.type = CU_MEMORYTYPE_DEVICE;
  if (*s.type == CU_MEMORYTYPE_DEVICE) return CUDA_SUCCESS;
  if (*s.type == CU_MEMORYTYPE_ARRAY) return refuse("a memcpy node naming a CUDA array");
  const auto* base = static_cast<const uint8_t*>(
      *s.type == CU_MEMORYTYPE_HOST ? s.host : reinterpret_cast<const void*>(*s.device));
  const size_t pitch = s.pitch ? s.pitch : c.WidthInBytes;
  const size_t height = s.height ? s.height : c.Height;
  const size_t first = s.x + (s.y + s.z * height) * pitch;
  const size_t rows = (c.Depth ? c.Depth - 1 : 0) * height + (c.Height ? c.Height - 1 : 0);
  const size_t span = std::max<size_t>(rows * pitch + c.WidthInBytes, 1);
  CUdeviceptr mirrored = 0;
  if (!base) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = registered::mirror_for_device(base + first, span, &mirrored);
      rc != CUDA_SUCCESS)
    return rc;
  *s.type = CU_MEMORYTYPE_DEVICE;
  *s.device = mirrored - first;
  return CUDA_SUCCESS;
}

CUresult write_memcpy(protocol::Writer& w, CUgraphNodeParams p) {
  CUDA_MEMCPY3D& c = p.memcpy.copyParams;
  const Side src{&c.srcMemoryType, &c.srcDevice, c.srcHost,  c.srcXInBytes,
                 c.srcY,           c.srcZ,       c.srcPitch, c.srcHeight};
  const Side dst{&c.dstMemoryType, &c.dstDevice, c.dstHost,  c.dstXInBytes,
                 c.dstY,           c.dstZ,       c.dstPitch, c.dstHeight};
  if (CUresult rc = device_side(src, c); rc != CUDA_SUCCESS) return rc;
  if (CUresult rc = device_side(dst, c); rc != CUDA_SUCCESS) return rc;
  c.srcHost = nullptr;
  c.dstHost = nullptr;
  c.srcArray = nullptr;
  c.dstArray = nullptr;
  c.reserved0 = nullptr;
  c.reserved1 = nullptr;
  w.put(p);
  return CUDA_SUCCESS;
}

// The function runs on the client: the node names the callback's id in its
// data, and the server's stand-in host function reaches it over the
// callback channel, as a stream's host callback does.
CUresult write_host(protocol::Writer& w, CUgraphNodeParams p) {
  uint64_t id = 0;
  if (CUresult rc = queue_graph_callback(p.host.fn, p.host.userData, &id); rc != CUDA_SUCCESS)
    return rc;
  p.host.fn = nullptr;
  p.host.userData = reinterpret_cast<void*>(id);
  w.put(p);
  return CUDA_SUCCESS;
}

CUresult write_alloc(protocol::Writer& w, CUgraphNodeParams p) {
  CUDA_MEM_ALLOC_NODE_PARAMS_v2& a = p.alloc;
  if (a.accessDescCount && !a.accessDescs) return CUDA_ERROR_INVALID_VALUE;
  const CUmemAccessDesc* descs = a.accessDescs;
  a.accessDescs = nullptr;
  a.poolProps.win32SecurityAttributes = nullptr;
  w.put(p);
  w.bytes(descs, a.accessDescCount * sizeof(CUmemAccessDesc));
  return CUDA_SUCCESS;
}

// The operations follow the parameters: plain values and device
// addresses, which the server's driver reads as they are.
CUresult write_batch_mem_op(protocol::Writer& w, CUgraphNodeParams p) {
  CUDA_BATCH_MEM_OP_NODE_PARAMS_v2& b = p.memOp;
  if (b.count > protocol::kMaxBatchMemOps || (b.count && !b.paramArray))
    return CUDA_ERROR_INVALID_VALUE;
  const CUstreamBatchMemOpParams* ops = b.paramArray;
  b.paramArray = nullptr;
  w.put(p);
  w.bytes(ops, b.count * sizeof(CUstreamBatchMemOpParams));
  return CUDA_SUCCESS;
}

CUresult write_conditional(protocol::Writer& w, CUgraphNodeParams p, bool adding,
                           std::vector<uint64_t>* bodies) {
  if (p.conditional.size > kMaxBodies) return CUDA_ERROR_INVALID_VALUE;
  p.conditional.phGraph_out = nullptr;
  w.put(p);
  if (!adding) return CUDA_SUCCESS;
  bodies->resize(p.conditional.size);
  for (uint64_t& id : *bodies) w.u64(id = new_handle_id());
  return CUDA_SUCCESS;
}

}  // namespace

CUresult write_node_params(protocol::Writer& w, const CUgraphNodeParams& p, bool adding,
                           std::vector<uint64_t>* bodies) {
  switch (p.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return write_kernel(w, p);
    case CU_GRAPH_NODE_TYPE_MEMCPY: return write_memcpy(w, p);
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: return write_alloc(w, p);
    case CU_GRAPH_NODE_TYPE_CONDITIONAL: return write_conditional(w, p, adding, bodies);
    case CU_GRAPH_NODE_TYPE_MEMSET:
    case CU_GRAPH_NODE_TYPE_GRAPH:
    case CU_GRAPH_NODE_TYPE_EMPTY:
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      w.put(p);  // plain values and handles (client ids) only
      return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_HOST: return write_host(w, p);
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: return write_batch_mem_op(w, p);
    default: return refuse("external semaphore nodes");
  }
}

CUgraphNodeParams host_node(const CUDA_HOST_NODE_PARAMS& h) {
  CUgraphNodeParams p{};
  p.type = CU_GRAPH_NODE_TYPE_HOST;
  p.host.fn = h.fn;
  p.host.userData = h.userData;
  return p;
}

CUgraphNodeParams kernel_node(const CUDA_KERNEL_NODE_PARAMS& k) {
  static_assert(sizeof(CUDA_KERNEL_NODE_PARAMS) == sizeof(CUDA_KERNEL_NODE_PARAMS_v3));
  CUgraphNodeParams p{};
  p.type = CU_GRAPH_NODE_TYPE_KERNEL;
  std::memcpy(&p.kernel, &k, sizeof k);
  return p;
}

CUgraphNodeParams batch_mem_op_node(const CUDA_BATCH_MEM_OP_NODE_PARAMS& b) {
  CUgraphNodeParams p{};
  p.type = CU_GRAPH_NODE_TYPE_BATCH_MEM_OP;
  p.memOp = {b.ctx, b.count, b.paramArray, b.flags};
  return p;
}

// The typed memcpy calls name no context for a set: the current one, as
// the driver would use.
CUgraphNodeParams memcpy_node(const CUDA_MEMCPY3D& copy, CUcontext ctx) {
  CUgraphNodeParams p{};
  p.type = CU_GRAPH_NODE_TYPE_MEMCPY;
  p.memcpy.copyCtx = ctx ? ctx : handle_from_id<CUcontext>(current_context_id());
  p.memcpy.copyParams = copy;
  return p;
}

}  // namespace scuda::client
