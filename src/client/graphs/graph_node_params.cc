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

using WireNode = protocol::op::NodeParams;

// The arguments are packed into `packed` as a launch packs them (a length,
// then the bytes), and the node's view skips the length.
CUresult take_kernel(const CUgraphNodeParams& p, protocol::Writer* packed, WireNode* out) {
  const CUDA_KERNEL_NODE_PARAMS_v3& k = p.kernel;
  const uint64_t fn = k.func ? handle_id(k.func) : handle_id(k.kern);
  if (CUresult rc = pack_arguments(fn, k.kernelParams, k.extra, *packed); rc != CUDA_SUCCESS)
    return rc;
  const std::vector<uint8_t>& bytes = packed->data();
  out->args = std::string_view(reinterpret_cast<const char*>(bytes.data()) + sizeof(uint64_t),
                               bytes.size() - sizeof(uint64_t));
  out->params.kernel.kernelParams = nullptr;
  out->params.kernel.extra = nullptr;
  return CUDA_SUCCESS;
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

CUresult take_memcpy(WireNode* out) {
  CUDA_MEMCPY3D& c = out->params.memcpy.copyParams;
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
  return CUDA_SUCCESS;
}

// The function runs on the client: the node names the callback's id in its
// data, and the server's stand-in host function reaches it over the
// callback channel, as a stream's host callback does.
CUresult take_host(WireNode* out) {
  CUDA_HOST_NODE_PARAMS_v2& h = out->params.host;
  uint64_t id = 0;
  if (CUresult rc = queue_graph_callback(h.fn, h.userData, &id); rc != CUDA_SUCCESS) return rc;
  h.fn = nullptr;
  h.userData = reinterpret_cast<void*>(id);
  return CUDA_SUCCESS;
}

CUresult take_alloc(WireNode* out) {
  CUDA_MEM_ALLOC_NODE_PARAMS_v2& a = out->params.alloc;
  if (a.accessDescCount && !a.accessDescs) return CUDA_ERROR_INVALID_VALUE;
  out->access.assign(a.accessDescs, a.accessDescs + a.accessDescCount);
  a.accessDescs = nullptr;
  a.poolProps.win32SecurityAttributes = nullptr;
  return CUDA_SUCCESS;
}

// The operations follow the parameters: plain values and device
// addresses, which the server's driver reads as they are.
CUresult take_batch_mem_op(WireNode* out) {
  CUDA_BATCH_MEM_OP_NODE_PARAMS_v2& b = out->params.memOp;
  if (b.count > protocol::kMaxBatchMemOps || (b.count && !b.paramArray))
    return CUDA_ERROR_INVALID_VALUE;
  out->mem_ops.assign(b.paramArray, b.paramArray + b.count);
  b.paramArray = nullptr;
  return CUDA_SUCCESS;
}

// An add proposes an id for each body graph the driver makes.
CUresult take_conditional(bool adding, WireNode* out) {
  CUDA_CONDITIONAL_NODE_PARAMS& c = out->params.conditional;
  if (c.size > kMaxBodies) return CUDA_ERROR_INVALID_VALUE;
  c.phGraph_out = nullptr;
  if (adding) {
    out->bodies.resize(c.size);
    for (uint64_t& id : out->bodies) id = new_handle_id();
  }
  return CUDA_SUCCESS;
}

}  // namespace

CUresult take_node_params(const CUgraphNodeParams& p, bool adding, protocol::Writer* packed,
                          protocol::op::NodeParams* out) {
  out->params = p;
  switch (p.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return take_kernel(p, packed, out);
    case CU_GRAPH_NODE_TYPE_MEMCPY: return take_memcpy(out);
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: return take_alloc(out);
    case CU_GRAPH_NODE_TYPE_CONDITIONAL: return take_conditional(adding, out);
    case CU_GRAPH_NODE_TYPE_MEMSET:
    case CU_GRAPH_NODE_TYPE_GRAPH:
    case CU_GRAPH_NODE_TYPE_EMPTY:
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
    case CU_GRAPH_NODE_TYPE_MEM_FREE:
      return CUDA_SUCCESS;  // plain values and handles (client ids) only
    case CU_GRAPH_NODE_TYPE_HOST: return take_host(out);
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: return take_batch_mem_op(out);
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
