// Graph nodes whose parameters hold pointers: added, set and read through
// the graph ops (graph_node_params.h encodes them). The typed entry points
// become the generic node calls, as the driver documents them to be.
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/graphs/graph_node_params.h"
#include "client/kernels/layouts.h"
#include "client/memory/memory.h"
#include "client/modules/lookups.h"
#include "client/op_calls.h"
#include "client/runtime.h"
#include "client/state.h"
#include "client/streams/host_callbacks.h"
#include "client_gen.h"
#include "common/lock_order.h"
#include "custom.h"
#include "forward.h"
#include "protocol/op_layouts.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

namespace op = protocol::op;
using protocol::Writer;

// What the driver would own for a node, valid while the node lives: the
// kernel arguments a get returned, a conditional node's body graphs.
struct NodeStorage {
  std::string args;
  std::vector<void*> pointers;
  size_t args_size = 0;
  void* extra[5] = {};
  std::vector<CUgraph> bodies;
  std::vector<CUmemAccessDesc> access;            // a memory allocation node's, as last read
  std::vector<CUstreamBatchMemOpParams> mem_ops;  // a batch memory operation node's, as last read
};

// A node is accessible from at most this many devices' worth of descriptors.
constexpr uint64_t kMaxAccessDescs = 1024;

}  // namespace

namespace parts {

struct GraphNodeStorage {
  RankedMutex mu{LockRank::kLeaf, "GraphNodeStorage::mu"};
  std::unordered_map<uint64_t, NodeStorage> by_node;
};

}  // namespace parts

namespace {

parts::GraphNodeStorage& storage() { return client_state().graph_node_storage.get(); }

// Keeps the outputs of an add: a conditional node's bodies, an
// allocation's address.
CUresult keep_added(const op::GraphAddNode::Reply& added, size_t bodies, CUgraphNodeParams* p) {
  if (p->type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
    if (added.bodies.size() != bodies) return bad_reply("cuGraphAddNode");
    std::lock_guard lock(storage().mu);
    std::vector<CUgraph>& out = storage().by_node[added.node].bodies;
    out.clear();
    for (uint64_t id : added.bodies) out.push_back(handle_from_id<CUgraph>(id));
    p->conditional.phGraph_out = out.data();
  }
  if (p->type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) {
    p->alloc.dptr = added.address;
    note_allocation(p->alloc.dptr, p->alloc.bytesize);
  }
  return CUDA_SUCCESS;
}

std::vector<uint64_t> ids_of(const CUgraphNode* nodes, size_t count) {
  std::vector<uint64_t> ids(count);
  for (size_t i = 0; i < count; ++i) ids[i] = handle_id(nodes[i]);
  return ids;
}

CUresult add_node(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps,
                  const CUgraphEdgeData* edges, size_t count, CUgraphNodeParams* p) {
  if (!node || !p || (count && !deps)) return CUDA_ERROR_INVALID_VALUE;
  op::GraphAddNode::Request request;
  request.graph = handle_id(graph);
  request.proposed = new_handle_id();
  if (deps) request.deps = ids_of(deps, count);
  if (edges) request.edges.emplace(edges, edges + count);
  Writer packed;
  if (CUresult rc = take_node_params(*p, true, &packed, &request.node); rc != CUDA_SUCCESS)
    return rc;
  op::GraphAddNode::Reply added;
  if (CUresult rc = ask<op::GraphAddNode>(request, &added); rc != CUDA_SUCCESS) return rc;
  *node = handle_from_id<CUgraphNode>(added.node);
  return keep_added(added, request.node.bodies.size(), p);
}

// exec 0: a node of a graph; else the node's copy in that executable graph.
CUresult set_params(CUgraphExec exec, CUgraphNode node, const CUgraphNodeParams* p) {
  if (!p) return CUDA_ERROR_INVALID_VALUE;
  Writer packed;
  op::NodeParams params;
  if (CUresult rc = take_node_params(*p, false, &packed, &params); rc != CUDA_SUCCESS) return rc;
  if (!exec) return ask<op::GraphNodeSetParams>({handle_id(node), std::move(params)});
  return ask<op::GraphExecNodeSetParams>({handle_id(exec), handle_id(node), std::move(params)});
}

// Points the returned parameters at arguments kept for the node: one
// pointer per parameter when the layout is known, else the buffer.
void expose_arguments(uint64_t node, std::string args, const Layout& layout,
                      CUDA_KERNEL_NODE_PARAMS* k) {
  std::lock_guard lock(storage().mu);
  NodeStorage& s = storage().by_node[node];
  s.args = std::move(args);
  s.args_size = s.args.size();
  s.pointers.clear();
  for (const protocol::ParamSlot& slot : layout)
    s.pointers.push_back(slot.offset + slot.size <= s.args.size() ? s.args.data() + slot.offset
                                                                  : nullptr);
  if (!layout.empty()) {
    k->kernelParams = s.pointers.data();
    return;
  }
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, s.args.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &s.args_size, CU_LAUNCH_PARAM_END};
  std::memcpy(s.extra, extra, sizeof extra);
  k->extra = s.args.empty() ? nullptr : s.extra;
}

// The server names the function (binding one new to the session to the id
// proposed here) and sends the layout it packed the arguments by.
CUresult kernel_get_params(CUgraphNode node, CUDA_KERNEL_NODE_PARAMS* k) {
  if (!k) return CUDA_ERROR_INVALID_VALUE;
  protocol::op::GraphKernelNodeGetParams::Reply reply;
  if (CUresult rc =
          ask<protocol::op::GraphKernelNodeGetParams>({handle_id(node), new_handle_id()}, &reply);
      rc != CUDA_SUCCESS)
    return rc;
  if (!reply.layout || !valid_layout(*reply.layout)) return bad_reply("cuGraphKernelNodeGetParams");
  *k = reply.params;
  std::string args = std::move(reply.args);
  const Layout layout = std::move(*reply.layout);
  const std::string& name = reply.name;
  if (k->func) note_function_name(handle_id(k->func), name);
  if (k->func && !find_layout(handle_id(k->func)))
    note_layout(handle_id(k->func), std::make_shared<const Layout>(layout));
  spdlog::trace(
      "kernel node {}: function {:#x} ({}), kernel {:#x}, context {:#x}, {} parameters "
      "in {} bytes",
      static_cast<void*>(node), handle_id(k->func), name, handle_id(k->kern), handle_id(k->ctx),
      layout.size(), args.size());
  expose_arguments(handle_id(node), std::move(args), layout, k);
  return CUDA_SUCCESS;
}

// Asks Op for a node's parameters and the array they point to, which the
// client keeps with the node (in `kept`), since the pointer the program gets
// must stay valid as the driver's would.
template <class Op, class P, class T>
CUresult get_with_array(CUgraphNode node, std::vector<T> NodeStorage::*kept, uint64_t max,
                        P* params, T** items, uint64_t* count) {
  if (!params) return CUDA_ERROR_INVALID_VALUE;
  typename Op::Reply reply;
  if (CUresult rc = ask<Op>({handle_id(node)}, &reply); rc != CUDA_SUCCESS) return rc;
  if (reply.items.size() > max) return bad_reply(protocol::op_name(Op::kOp));
  *params = reply.params;
  *count = reply.items.size();
  std::lock_guard lock(storage().mu);
  std::vector<T>& v = storage().by_node[handle_id(node)].*kept;
  v = std::move(reply.items);
  *items = v.data();
  return CUDA_SUCCESS;
}

CUresult mem_alloc_get_params(CUgraphNode node, CUDA_MEM_ALLOC_NODE_PARAMS* params) {
  CUDA_MEM_ALLOC_NODE_PARAMS p{};
  CUmemAccessDesc* descs = nullptr;
  uint64_t count = 0;
  if (CUresult rc = get_with_array<protocol::op::GraphMemAllocNodeGetParams>(
          node, &NodeStorage::access, kMaxAccessDescs, params ? &p : nullptr, &descs, &count);
      rc != CUDA_SUCCESS)
    return rc;
  p.accessDescs = descs;
  p.accessDescCount = count;
  *params = p;
  return CUDA_SUCCESS;
}

// The server's context comes back as the client's id for it.
CUresult batch_mem_op_get_params(CUgraphNode node, CUDA_BATCH_MEM_OP_NODE_PARAMS* params) {
  CUDA_BATCH_MEM_OP_NODE_PARAMS p{};
  CUstreamBatchMemOpParams* ops = nullptr;
  uint64_t count = 0;
  if (CUresult rc = get_with_array<protocol::op::GraphBatchMemOpNodeGetParams>(
          node, &NodeStorage::mem_ops, protocol::kMaxBatchMemOps, params ? &p : nullptr, &ops,
          &count);
      rc != CUDA_SUCCESS)
    return rc;
  p.paramArray = ops;
  p.count = static_cast<unsigned>(count);
  *params = p;
  return CUDA_SUCCESS;
}

CUresult add_typed(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, size_t count,
                   CUgraphNodeParams p) {
  return add_node(node, graph, deps, nullptr, count, &p);
}

// A typed set: `exec` null for a graph's node, else the executable graph's.
template <class Params, class Make>
CUresult set_typed(CUgraphExec exec, bool exec_call, CUgraphNode node, const Params* params,
                   Make make) {
  if (!params || (exec_call && !exec)) return CUDA_ERROR_INVALID_VALUE;
  const CUgraphNodeParams p = make(*params);
  return set_params(exec, node, &p);
}

CUresult add_alloc(CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, size_t count,
                   CUDA_MEM_ALLOC_NODE_PARAMS* params) {
  static_assert(sizeof(CUDA_MEM_ALLOC_NODE_PARAMS) == sizeof(CUDA_MEM_ALLOC_NODE_PARAMS_v2));
  if (!params) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNodeParams p{};
  p.type = CU_GRAPH_NODE_TYPE_MEM_ALLOC;
  std::memcpy(&p.alloc, params, sizeof *params);
  const CUresult rc = add_node(node, graph, deps, nullptr, count, &p);
  if (rc == CUDA_SUCCESS) params->dptr = p.alloc.dptr;
  return rc;
}

}  // namespace

}  // namespace scuda::client

using namespace scuda::client;

CUresult scuda::client::custom::cuGraphAddNode_v2(CUgraphNode* node, CUgraph graph,
                                                  const CUgraphNode* deps,
                                                  const CUgraphEdgeData* edges, size_t count,
                                                  CUgraphNodeParams* params) {
  return add_node(node, graph, deps, edges, count, params);
}

CUresult scuda::client::custom::cuGraphNodeSetParams(CUgraphNode node, CUgraphNodeParams* params) {
  return set_params(nullptr, node, params);
}

CUresult scuda::client::custom::cuGraphExecNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                         CUgraphNodeParams* params) {
  if (!exec) return CUDA_ERROR_INVALID_VALUE;
  return set_params(exec, node, params);
}

CUresult scuda::client::custom::cuGraphAddKernelNode_v2(CUgraphNode* node, CUgraph graph,
                                                        const CUgraphNode* deps, size_t count,
                                                        const CUDA_KERNEL_NODE_PARAMS* params) {
  if (!params) return CUDA_ERROR_INVALID_VALUE;
  return add_typed(node, graph, deps, count, kernel_node(*params));
}

CUresult scuda::client::custom::cuGraphKernelNodeSetParams_v2(
    CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* params) {
  return set_typed(nullptr, false, node, params, kernel_node);
}

CUresult scuda::client::custom::cuGraphExecKernelNodeSetParams_v2(
    CUgraphExec exec, CUgraphNode node, const CUDA_KERNEL_NODE_PARAMS* params) {
  return set_typed(exec, true, node, params, kernel_node);
}

CUresult scuda::client::custom::cuGraphKernelNodeGetParams_v2(CUgraphNode node,
                                                              CUDA_KERNEL_NODE_PARAMS* params) {
  return kernel_get_params(node, params);
}

CUresult scuda::client::custom::cuGraphAddMemcpyNode(CUgraphNode* node, CUgraph graph,
                                                     const CUgraphNode* deps, size_t count,
                                                     const CUDA_MEMCPY3D* copy, CUcontext ctx) {
  if (!copy) return CUDA_ERROR_INVALID_VALUE;
  return add_typed(node, graph, deps, count, memcpy_node(*copy, ctx));
}

CUresult scuda::client::custom::cuGraphMemcpyNodeSetParams(CUgraphNode node,
                                                           const CUDA_MEMCPY3D* copy) {
  return set_typed(nullptr, false, node, copy,
                   [](const CUDA_MEMCPY3D& c) { return memcpy_node(c, nullptr); });
}

CUresult scuda::client::custom::cuGraphExecMemcpyNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                               const CUDA_MEMCPY3D* copy,
                                                               CUcontext ctx) {
  return set_typed(exec, true, node, copy,
                   [ctx](const CUDA_MEMCPY3D& c) { return memcpy_node(c, ctx); });
}

CUresult scuda::client::custom::cuGraphAddHostNode(CUgraphNode* node, CUgraph graph,
                                                   const CUgraphNode* deps, size_t count,
                                                   const CUDA_HOST_NODE_PARAMS* params) {
  if (!params) return CUDA_ERROR_INVALID_VALUE;
  return add_typed(node, graph, deps, count, host_node(*params));
}

CUresult scuda::client::custom::cuGraphHostNodeSetParams(CUgraphNode node,
                                                         const CUDA_HOST_NODE_PARAMS* params) {
  return set_typed(nullptr, false, node, params, host_node);
}

// The server's node runs a stand-in with the callback's id as its data; the
// program gets back the function and data it gave.
CUresult scuda::client::custom::cuGraphHostNodeGetParams(CUgraphNode node,
                                                         CUDA_HOST_NODE_PARAMS* params) {
  if (!params) return CUDA_ERROR_INVALID_VALUE;
  CUDA_HOST_NODE_PARAMS remote{};
  if (CUresult rc = forward::cuGraphHostNodeGetParams(node, &remote); rc != CUDA_SUCCESS) return rc;
  CUhostFn fn = nullptr;
  void* data = nullptr;
  if (!host_function_of(reinterpret_cast<uintptr_t>(remote.userData), &fn, &data))
    return bad_reply("cuGraphHostNodeGetParams");
  params->fn = fn;
  params->userData = data;
  return CUDA_SUCCESS;
}

CUresult scuda::client::custom::cuGraphExecHostNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                             const CUDA_HOST_NODE_PARAMS* params) {
  return set_typed(exec, true, node, params, host_node);
}

CUresult scuda::client::custom::cuGraphMemAllocNodeGetParams(CUgraphNode node,
                                                             CUDA_MEM_ALLOC_NODE_PARAMS* params) {
  return mem_alloc_get_params(node, params);
}

CUresult scuda::client::custom::cuGraphAddMemAllocNode(CUgraphNode* node, CUgraph graph,
                                                       const CUgraphNode* deps, size_t count,
                                                       CUDA_MEM_ALLOC_NODE_PARAMS* params) {
  return add_alloc(node, graph, deps, count, params);
}

CUresult scuda::client::custom::cuGraphAddBatchMemOpNode(
    CUgraphNode* node, CUgraph graph, const CUgraphNode* deps, size_t count,
    const CUDA_BATCH_MEM_OP_NODE_PARAMS* params) {
  if (!params) return CUDA_ERROR_INVALID_VALUE;
  return add_typed(node, graph, deps, count, batch_mem_op_node(*params));
}

CUresult scuda::client::custom::cuGraphBatchMemOpNodeSetParams(
    CUgraphNode node, const CUDA_BATCH_MEM_OP_NODE_PARAMS* params) {
  return set_typed(nullptr, false, node, params, batch_mem_op_node);
}

CUresult scuda::client::custom::cuGraphExecBatchMemOpNodeSetParams(
    CUgraphExec exec, CUgraphNode node, const CUDA_BATCH_MEM_OP_NODE_PARAMS* params) {
  return set_typed(exec, true, node, params, batch_mem_op_node);
}

CUresult scuda::client::custom::cuGraphBatchMemOpNodeGetParams(
    CUgraphNode node, CUDA_BATCH_MEM_OP_NODE_PARAMS* params) {
  return batch_mem_op_get_params(node, params);
}
