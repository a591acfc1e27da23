// Hand-written graph node requests: nodes whose parameters hold pointers
// (graph_node_params.h), added through the driver's generic node calls, and
// a kernel node's parameters read back with its arguments packed.
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <string>

#include "protocol/op_layouts.h"
#include "protocol/ops.h"
#include "server/graphs/graph_node_params.h"
#include "server/kernels/launch_attributes.h"
#include "server/kernels/param_layout.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"
#include "server/session/typed_handler.h"
#include "server_gen.h"

namespace scuda::server {

namespace {

using protocol::Reader;
using protocol::Writer;
namespace op = protocol::op;

bool can_bind_bodies(Session& s, const std::vector<uint64_t>& proposed) {
  std::vector<uint64_t> ids = proposed;
  std::sort(ids.begin(), ids.end());
  if (std::adjacent_find(ids.begin(), ids.end()) != ids.end()) return false;
  return std::all_of(ids.begin(), ids.end(), [&](uint64_t id) { return s.handles().can_bind(id); });
}

// The dependencies' nodes, in `nodes`; false when one is not known.
bool resolve_nodes(Session& s, const std::vector<uint64_t>& ids, std::vector<CUgraphNode>* nodes) {
  nodes->resize(ids.size());
  for (size_t i = 0; i < ids.size(); ++i)
    if (!gen::resolve(s, ids[i], HandleKind::CUgraphNode, &(*nodes)[i])) return false;
  return true;
}

// The outputs of an add beyond the node: a conditional node's body graphs,
// an allocation's address.
void note_added(Session& s, const std::vector<uint64_t>& proposed_bodies, const NodeParams& n,
                op::GraphAddNode::Reply* reply) {
  if (n.p.type == CU_GRAPH_NODE_TYPE_CONDITIONAL) {
    for (size_t i = 0; i < proposed_bodies.size(); ++i)
      reply->bodies.push_back(s.handles().bind(proposed_bodies[i], HandleKind::CUgraph,
                                               n.p.conditional.phGraph_out[i]));
  }
  if (n.p.type == CU_GRAPH_NODE_TYPE_MEM_ALLOC) reply->address = n.p.alloc.dptr;
}

CUresult add_node(Session& s, const op::GraphAddNode::Request& r, op::GraphAddNode::Reply* reply) {
  NodeParams n;
  const size_t count = r.deps ? r.deps->size() : 0;
  if (!take_node_params(r.node, true, &n) || count > gen::kMaxArrayItems ||
      (r.edges && r.edges->size() != count))
    return kMalformed;
  if (!s.handles().can_bind(r.proposed) || !can_bind_bodies(s, r.node.bodies))
    return CUDA_ERROR_INVALID_VALUE;
  CUgraph graph = nullptr;
  std::vector<CUgraphNode> deps;
  if (!gen::resolve(s, r.graph, HandleKind::CUgraph, &graph) ||
      (r.deps && !resolve_nodes(s, *r.deps, &deps)))
    return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult rc = resolve_node_params(s, &n); rc != CUDA_SUCCESS) return rc;
  if (!s.driver().cuGraphAddNode_v2) return CUDA_ERROR_NOT_SUPPORTED;
  CUgraphNode node = nullptr;
  const CUgraphEdgeData* edges = r.edges ? r.edges->data() : nullptr;
  CUresult rc = s.driver().cuGraphAddNode_v2(&node, graph, r.deps ? deps.data() : nullptr, edges,
                                             count, &n.p);
  if (rc != CUDA_SUCCESS) return rc;
  reply->node = s.handles().bind(r.proposed, HandleKind::CUgraphNode, node);
  note_added(s, r.node.bodies, n, reply);
  return CUDA_SUCCESS;
}

// exec_id 0: a node of a graph; else the node's copy in that executable graph.
CUresult set_params(Session& s, uint64_t exec_id, uint64_t node_id, const op::NodeParams& wire) {
  NodeParams n;
  if (!take_node_params(wire, false, &n)) return kMalformed;
  CUgraphExec graph_exec = nullptr;
  CUgraphNode node = nullptr;
  if ((exec_id && !gen::resolve(s, exec_id, HandleKind::CUgraphExec, &graph_exec)) ||
      !gen::resolve(s, node_id, HandleKind::CUgraphNode, &node))
    return CUDA_ERROR_INVALID_HANDLE;
  if (CUresult rc = resolve_node_params(s, &n); rc != CUDA_SUCCESS) return rc;
  const DriverTable& d = s.driver();
  if (!exec_id)
    return d.cuGraphNodeSetParams ? d.cuGraphNodeSetParams(node, &n.p) : CUDA_ERROR_NOT_SUPPORTED;
  return d.cuGraphExecNodeSetParams ? d.cuGraphExecNodeSetParams(graph_exec, node, &n.p)
                                    : CUDA_ERROR_NOT_SUPPORTED;
}

CUresult node_set_params(Session& s, const op::GraphNodeSetParams::Request& r, protocol::Empty*) {
  return set_params(s, 0, r.node, r.params);
}

// An executable graph's id is never 0: the client's ids start at 1.
CUresult exec_node_set_params(Session& s, const op::GraphExecNodeSetParams::Request& r,
                              protocol::Empty*) {
  if (!r.exec) return CUDA_ERROR_INVALID_HANDLE;
  return set_params(s, r.exec, r.node, r.params);
}

// The arguments as one buffer, packed by `layout` from kernelParams, or the
// buffer an `extra` list names.
std::string packed_arguments(const CUDA_KERNEL_NODE_PARAMS& k, const ParamLayout& layout) {
  std::string buf;
  if (k.kernelParams) {
    for (size_t i = 0; i < layout.size(); ++i) {
      const protocol::ParamSlot& slot = layout[i];
      if (buf.size() < slot.offset + slot.size) buf.resize(slot.offset + slot.size);
      if (k.kernelParams[i])
        buf.replace(slot.offset, slot.size, static_cast<const char*>(k.kernelParams[i]), slot.size);
    }
    return buf;
  }
  const void* pointer = nullptr;
  const size_t* size = nullptr;
  for (size_t i = 0; k.extra && k.extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (k.extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) pointer = k.extra[i + 1];
    if (k.extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE)
      size = static_cast<const size_t*>(k.extra[i + 1]);
  }
  if (pointer && size) buf.assign(static_cast<const char*>(pointer), *size);
  return buf;
}

// The function's name comes along: cuDNN asks it right after.
CUresult kernel_node_get_params(Session& s, const op::GraphKernelNodeGetParams::Request& q,
                                op::GraphKernelNodeGetParams::Reply* reply) {
  if (!s.handles().can_bind(q.proposed)) return CUDA_ERROR_INVALID_VALUE;
  CUgraphNode node = nullptr;
  if (!gen::resolve(s, q.node, HandleKind::CUgraphNode, &node)) return CUDA_ERROR_INVALID_HANDLE;
  const DriverTable& d = s.driver();
  if (!d.cuGraphKernelNodeGetParams_v2) return CUDA_ERROR_NOT_SUPPORTED;
  CUDA_KERNEL_NODE_PARAMS k{};
  if (CUresult rc = d.cuGraphKernelNodeGetParams_v2(node, &k); rc != CUDA_SUCCESS) return rc;
  reply->layout =
      (k.func ? function_layout(d, k.func) : kernel_layout(d, k.kern)).value_or(ParamLayout{});
  reply->args = packed_arguments(k, *reply->layout);
  CUDA_KERNEL_NODE_PARAMS& wire = reply->params;
  wire = k;
  wire.func =
      reinterpret_cast<CUfunction>(s.handles().bind(q.proposed, HandleKind::CUfunction, k.func));
  wire.kern = reinterpret_cast<CUkernel>(s.handles().find(k.kern));
  wire.ctx = reinterpret_cast<CUcontext>(s.handles().find(k.ctx));
  wire.kernelParams = nullptr;
  wire.extra = nullptr;
  const char* name = nullptr;
  if (k.func && d.cuFuncGetName && d.cuFuncGetName(&name, k.func) == CUDA_SUCCESS && name)
    reply->name = name;
  return CUDA_SUCCESS;
}

CUresult kernel_node_attribute(Session& s, const op::GraphKernelNodeAttribute::Request& q,
                               op::GraphKernelNodeAttribute::Reply* reply) {
  CUgraphNode node = nullptr;
  if (!gen::resolve(s, q.node, HandleKind::CUgraphNode, &node)) return CUDA_ERROR_INVALID_HANDLE;
  const DriverTable& d = s.driver();
  if (!d.cuGraphKernelNodeSetAttribute || !d.cuGraphKernelNodeGetAttribute)
    return CUDA_ERROR_NOT_SUPPORTED;
  CUlaunchAttribute a{};
  a.id = static_cast<CUlaunchAttributeID>(q.attribute);
  if (q.value) {
    a.value = *q.value;
    if (CUresult rc = translate_attribute(s, &a, AttributeUse::kKernelNode); rc != CUDA_SUCCESS)
      return rc;
    return d.cuGraphKernelNodeSetAttribute(node, a.id, &a.value);
  }
  if (CUresult rc = d.cuGraphKernelNodeGetAttribute(node, a.id, &a.value); rc != CUDA_SUCCESS)
    return rc;
  name_attribute_handles(s, &a);
  reply->value = a.value;
  return CUDA_SUCCESS;
}

CUresult mem_alloc_node_get_params(Session& s, const op::NodeRequest& q,
                                   op::GraphMemAllocNodeGetParams::Reply* reply) {
  CUgraphNode node = nullptr;
  if (!gen::resolve(s, q.node, HandleKind::CUgraphNode, &node)) return CUDA_ERROR_INVALID_HANDLE;
  const DriverTable& d = s.driver();
  if (!d.cuGraphMemAllocNodeGetParams) return CUDA_ERROR_NOT_SUPPORTED;
  CUDA_MEM_ALLOC_NODE_PARAMS& p = reply->params;
  if (CUresult rc = d.cuGraphMemAllocNodeGetParams(node, &p); rc != CUDA_SUCCESS) return rc;
  if (p.accessDescs) reply->items.assign(p.accessDescs, p.accessDescs + p.accessDescCount);
  p.accessDescs = nullptr;
  p.poolProps.win32SecurityAttributes = nullptr;
  return CUDA_SUCCESS;
}

CUresult batch_mem_op_node_get_params(Session& s, const op::NodeRequest& q,
                                      op::GraphBatchMemOpNodeGetParams::Reply* reply) {
  CUgraphNode node = nullptr;
  if (!gen::resolve(s, q.node, HandleKind::CUgraphNode, &node)) return CUDA_ERROR_INVALID_HANDLE;
  const DriverTable& d = s.driver();
  if (!d.cuGraphBatchMemOpNodeGetParams) return CUDA_ERROR_NOT_SUPPORTED;
  CUDA_BATCH_MEM_OP_NODE_PARAMS& p = reply->params;
  if (CUresult rc = d.cuGraphBatchMemOpNodeGetParams(node, &p); rc != CUDA_SUCCESS) return rc;
  if (p.paramArray) reply->items.assign(p.paramArray, p.paramArray + p.count);
  p.ctx = reinterpret_cast<CUcontext>(s.handles().find(p.ctx));
  p.paramArray = nullptr;
  return CUDA_SUCCESS;
}

// The driver writes the DOT text into a file of the session's that lives
// for this request only.
CUresult graph_dot(Session& s, const protocol::op::GraphDot::Request& q,
                   protocol::op::GraphDot::Reply* a) {
  CUgraph graph = nullptr;
  if (!gen::resolve(s, q.graph, HandleKind::CUgraph, &graph)) return CUDA_ERROR_INVALID_HANDLE;
  if (!s.driver().cuGraphDebugDotPrint) return CUDA_ERROR_NOT_SUPPORTED;
  char path[] = "/tmp/scuda-graph-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return CUDA_ERROR_OPERATING_SYSTEM;
  close(fd);
  const CUresult rc = s.driver().cuGraphDebugDotPrint(graph, path, q.flags);
  std::ifstream file(path, std::ios::binary);
  a->text.assign(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
  unlink(path);
  return rc;
}

const HandlerEntry kHandlers[] = {
    typed_entry<protocol::op::GraphDot, graph_dot>(),
    typed_entry<op::GraphKernelNodeAttribute, kernel_node_attribute>(),
    typed_entry<op::GraphMemAllocNodeGetParams, mem_alloc_node_get_params>(),
    typed_entry<op::GraphBatchMemOpNodeGetParams, batch_mem_op_node_get_params>(),
    typed_entry<op::GraphAddNode, add_node>(),
    typed_entry<op::GraphNodeSetParams, node_set_params>(),
    typed_entry<op::GraphExecNodeSetParams, exec_node_set_params>(),
    typed_entry<op::GraphKernelNodeGetParams, kernel_node_get_params>(),
};

}  // namespace

std::span<const HandlerEntry> graph_handlers() { return kHandlers; }

}  // namespace scuda::server
