#include "server/graphs/graph_node_params.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <iterator>

#include "protocol/ops.h"
#include "server/callbacks/callback_channel.h"

namespace scuda::server {

namespace {

constexpr size_t kMaxAccessDescs = 64;
constexpr unsigned kMaxBodies = 1024;

template <class H>
bool translate(Session& s, H* field, HandleKind kind) {
  void* real = nullptr;
  if (!s.handles().resolve(reinterpret_cast<uintptr_t>(*field), kind, &real)) return false;
  *field = static_cast<H>(real);
  return true;
}

using WireNode = protocol::op::NodeParams;

// The driver only reads the arguments, the access descriptors and the
// operations that the request's lists hold, though its struct names some
// of them without const.
void take_kernel(const WireNode& w, NodeParams* n) {
  n->args_size = w.args.size();
  CUDA_KERNEL_NODE_PARAMS_v3& k = n->p.kernel;
  k.kernelParams = nullptr;
  k.extra = nullptr;
  if (!n->args_size) return;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, const_cast<char*>(w.args.data()),
                   CU_LAUNCH_PARAM_BUFFER_SIZE, &n->args_size, CU_LAUNCH_PARAM_END};
  std::copy(std::begin(extra), std::end(extra), n->extra);
  k.extra = n->extra;
}

bool take_alloc(const WireNode& w, NodeParams* n) {
  CUDA_MEM_ALLOC_NODE_PARAMS_v2& a = n->p.alloc;
  if (a.accessDescCount > kMaxAccessDescs || w.access.size() != a.accessDescCount) return false;
  a.accessDescs = w.access.empty() ? nullptr : w.access.data();
  a.poolProps.win32SecurityAttributes = nullptr;
  return true;
}

bool take_batch_mem_op(const WireNode& w, NodeParams* n) {
  CUDA_BATCH_MEM_OP_NODE_PARAMS_v2& b = n->p.memOp;
  if (b.count > protocol::kMaxBatchMemOps || w.mem_ops.size() != b.count) return false;
  b.paramArray =
      w.mem_ops.empty() ? nullptr : const_cast<CUstreamBatchMemOpParams*>(w.mem_ops.data());
  return true;
}

// Only an add proposes ids for the body graphs the driver makes.
bool take_conditional(const WireNode& w, bool adding, NodeParams* n) {
  CUDA_CONDITIONAL_NODE_PARAMS& c = n->p.conditional;
  c.phGraph_out = nullptr;
  return c.size <= kMaxBodies && w.bodies.size() == (adding ? c.size : 0);
}

// A list that the node's type has no use for.
bool stray_list(const WireNode& w, CUgraphNodeType type) {
  return (!w.args.empty() && type != CU_GRAPH_NODE_TYPE_KERNEL) ||
         (!w.access.empty() && type != CU_GRAPH_NODE_TYPE_MEM_ALLOC) ||
         (!w.mem_ops.empty() && type != CU_GRAPH_NODE_TYPE_BATCH_MEM_OP) ||
         (!w.bodies.empty() && type != CU_GRAPH_NODE_TYPE_CONDITIONAL);
}

CUresult check_memcpy(Session& s, CUDA_MEMCPY_NODE_PARAMS* m) {
  CUDA_MEMCPY3D& c = m->copyParams;
  if (c.srcMemoryType != CU_MEMORYTYPE_DEVICE || c.dstMemoryType != CU_MEMORYTYPE_DEVICE) {
    spdlog::warn("refused a graph memcpy node that names host memory or an array");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  c.srcHost = c.dstHost = nullptr;
  c.srcArray = c.dstArray = nullptr;
  c.reserved0 = c.reserved1 = nullptr;
  return translate(s, &m->copyCtx, HandleKind::CUcontext) ? CUDA_SUCCESS
                                                          : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult check_kernel(Session& s, CUDA_KERNEL_NODE_PARAMS_v3* k) {
  if (!translate(s, &k->func, HandleKind::CUfunction) ||
      !translate(s, &k->kern, HandleKind::CUkernel))
    return CUDA_ERROR_INVALID_HANDLE;
  return translate(s, &k->ctx, HandleKind::CUcontext) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult context_only(Session& s, CUcontext* ctx) {
  return translate(s, ctx, HandleKind::CUcontext) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult handle_only(bool ok) { return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE; }

}  // namespace

bool take_node_params(const WireNode& wire, bool adding, NodeParams* n) {
  n->p = wire.params;
  if (stray_list(wire, n->p.type)) return false;
  switch (n->p.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: take_kernel(wire, n); return true;
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: return take_alloc(wire, n);
    case CU_GRAPH_NODE_TYPE_CONDITIONAL: return take_conditional(wire, adding, n);
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: return take_batch_mem_op(wire, n);
    default: return true;
  }
}

CUresult resolve_node_params(Session& s, NodeParams* n) {
  CUgraphNodeParams& p = n->p;
  switch (p.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return check_kernel(s, &p.kernel);
    case CU_GRAPH_NODE_TYPE_MEMCPY: return check_memcpy(s, &p.memcpy);
    case CU_GRAPH_NODE_TYPE_MEMSET: return context_only(s, &p.memset.ctx);
    case CU_GRAPH_NODE_TYPE_CONDITIONAL: return context_only(s, &p.conditional.ctx);
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP:
      return context_only(s, &p.memOp.ctx);  // the operations hold device addresses only
    case CU_GRAPH_NODE_TYPE_GRAPH:
      return handle_only(translate(s, &p.graph.graph, HandleKind::CUgraph));
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD:
      return handle_only(translate(s, &p.eventRecord.event, HandleKind::CUevent));
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT:
      return handle_only(translate(s, &p.eventWait.event, HandleKind::CUevent));
    case CU_GRAPH_NODE_TYPE_HOST:
      p.host.fn = host_function_reached;  // userData is the client's callback id
      return CUDA_SUCCESS;
    case CU_GRAPH_NODE_TYPE_EMPTY:
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC:
    case CU_GRAPH_NODE_TYPE_MEM_FREE: return CUDA_SUCCESS;
    default:
      spdlog::warn("refused a graph node of type {}", static_cast<int>(p.type));
      return CUDA_ERROR_NOT_SUPPORTED;
  }
}

}  // namespace scuda::server
