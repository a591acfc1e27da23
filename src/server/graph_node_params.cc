#include "server/graph_node_params.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "protocol/ops.h"
#include "server/callback_channel.h"

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

bool read_kernel(protocol::Reader& in, NodeParams* n) {
  n->args = std::string(in.blob());
  n->args_size = n->args.size();
  CUDA_KERNEL_NODE_PARAMS_v3& k = n->p.kernel;
  k.kernelParams = nullptr;
  k.extra = nullptr;
  if (n->args_size) {
    void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, n->args.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                     &n->args_size, CU_LAUNCH_PARAM_END};
    std::copy(std::begin(extra), std::end(extra), n->extra);
    k.extra = n->extra;
  }
  return in.ok();
}

bool read_alloc(protocol::Reader& in, NodeParams* n) {
  CUDA_MEM_ALLOC_NODE_PARAMS_v2& a = n->p.alloc;
  if (a.accessDescCount > kMaxAccessDescs) return false;
  n->access.resize(a.accessDescCount);
  for (CUmemAccessDesc& d : n->access) d = in.get<CUmemAccessDesc>();
  a.accessDescs = n->access.empty() ? nullptr : n->access.data();
  a.poolProps.win32SecurityAttributes = nullptr;
  return in.ok();
}

bool read_batch_mem_op(protocol::Reader& in, NodeParams* n) {
  CUDA_BATCH_MEM_OP_NODE_PARAMS_v2& b = n->p.memOp;
  if (b.count > protocol::kMaxBatchMemOps) return false;
  n->mem_ops.resize(b.count);
  for (CUstreamBatchMemOpParams& op : n->mem_ops) op = in.get<CUstreamBatchMemOpParams>();
  b.paramArray = n->mem_ops.empty() ? nullptr : n->mem_ops.data();
  return in.ok();
}

bool read_conditional(protocol::Reader& in, bool adding, NodeParams* n) {
  CUDA_CONDITIONAL_NODE_PARAMS& c = n->p.conditional;
  c.phGraph_out = nullptr;
  if (c.size > kMaxBodies) return false;
  if (adding) n->proposed_bodies.resize(c.size);
  for (uint64_t& id : n->proposed_bodies) id = in.u64();
  return in.ok();
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

bool read_node_params(protocol::Reader& in, bool adding, NodeParams* n) {
  n->p = in.get<CUgraphNodeParams>();
  switch (n->p.type) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return read_kernel(in, n);
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: return read_alloc(in, n);
    case CU_GRAPH_NODE_TYPE_CONDITIONAL: return read_conditional(in, adding, n);
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: return read_batch_mem_op(in, n);
    default: return in.ok();
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
