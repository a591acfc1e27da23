// Instantiation with parameters, executable-graph updates and capture info:
// their results name graphs and nodes, which go back as the session's ids
// (a node new to the session, e.g. made by a capture, takes the id the
// client proposed).
#include <optional>

#include "protocol/op_layouts.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"
#include "server/session/typed_handler.h"
#include "server_gen.h"

namespace scuda::server {

namespace {

namespace op = protocol::op;

uint64_t node_id(Session& s, uint64_t proposed, CUgraphNode node) {
  return s.handles().bind(proposed, HandleKind::CUgraphNode, node);
}

CUresult instantiate(Session& s, const op::GraphInstantiate::Request& q,
                     std::optional<op::GraphInstantiate::Reply>* reply) {
  if (!s.handles().can_bind(q.proposed) || !s.handles().can_bind(q.proposed_node) ||
      q.proposed == q.proposed_node)
    return CUDA_ERROR_INVALID_VALUE;
  CUDA_GRAPH_INSTANTIATE_PARAMS params{};
  params.flags = q.flags;
  CUgraph graph = nullptr;
  if (!gen::resolve(s, q.graph, HandleKind::CUgraph, &graph) ||
      !gen::resolve(s, q.upload_stream, HandleKind::CUstream, &params.hUploadStream))
    return CUDA_ERROR_INVALID_HANDLE;
  const DriverTable& d = s.driver();
  const bool per_thread = q.mode & protocol::kCopyPerThread;
  auto fn = per_thread ? d.cuGraphInstantiateWithParams_ptsz : d.cuGraphInstantiateWithParams;
  if (!fn) return CUDA_ERROR_NOT_SUPPORTED;
  CUgraphExec exec = nullptr;
  const CUresult rc = fn(&exec, graph, &params);
  reply->emplace(op::GraphInstantiate::Reply{
      rc == CUDA_SUCCESS ? s.handles().bind(q.proposed, HandleKind::CUgraphExec, exec) : 0,
      static_cast<uint32_t>(params.result_out), node_id(s, q.proposed_node, params.hErrNode_out)});
  return rc;
}

CUresult exec_update(Session& s, const op::GraphExecUpdate::Request& q,
                     std::optional<op::GraphExecUpdate::Reply>* reply) {
  if (!s.handles().can_bind(q.proposed_node) || !s.handles().can_bind(q.proposed_from_node) ||
      q.proposed_node == q.proposed_from_node)
    return CUDA_ERROR_INVALID_VALUE;
  CUgraphExec exec = nullptr;
  CUgraph graph = nullptr;
  if (!gen::resolve(s, q.exec, HandleKind::CUgraphExec, &exec) ||
      !gen::resolve(s, q.graph, HandleKind::CUgraph, &graph))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!s.driver().cuGraphExecUpdate_v2) return CUDA_ERROR_NOT_SUPPORTED;
  CUgraphExecUpdateResultInfo info{};
  const CUresult rc = s.driver().cuGraphExecUpdate_v2(exec, graph, &info);
  reply->emplace(op::GraphExecUpdate::Reply{static_cast<uint32_t>(info.result),
                                            node_id(s, q.proposed_node, info.errorNode),
                                            node_id(s, q.proposed_from_node, info.errorFromNode)});
  return rc;
}

CUresult capture_info(Session& s, const op::StreamCaptureInfo::Request& q,
                      op::StreamCaptureInfo::Reply* reply) {
  gen::OutHandles<CUgraphNode> proposed;
  proposed.proposed = q.proposed_nodes;
  if (q.proposed_nodes.size() > gen::kMaxArrayItems || !s.handles().can_bind(q.proposed_graph) ||
      !gen::can_bind_all(s, proposed))
    return CUDA_ERROR_INVALID_VALUE;
  CUstream stream = nullptr;
  if (!gen::resolve(s, q.stream, HandleKind::CUstream, &stream)) return CUDA_ERROR_INVALID_HANDLE;
  const DriverTable& d = s.driver();
  auto fn = q.mode & protocol::kCopyPerThread ? d.cuStreamGetCaptureInfo_v3_ptsz
                                              : d.cuStreamGetCaptureInfo_v3;
  if (!fn) return CUDA_ERROR_NOT_SUPPORTED;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  CUgraph graph = nullptr;
  const CUgraphNode* deps = nullptr;
  const CUgraphEdgeData* edges = nullptr;
  size_t count = 0;
  if (CUresult rc = fn(stream, &status, &id, &graph, &deps, &edges, &count); rc != CUDA_SUCCESS)
    return rc;
  if (status == CU_STREAM_CAPTURE_STATUS_NONE) count = 0;
  reply->status = status;
  reply->id = id;
  reply->graph = s.handles().bind(q.proposed_graph, HandleKind::CUgraph, graph);
  reply->count = count;
  if (count > q.proposed_nodes.size()) return CUDA_SUCCESS;
  for (size_t i = 0; i < count; ++i)
    reply->nodes.push_back(node_id(s, q.proposed_nodes[i], deps[i]));
  if (edges) reply->edges.emplace(edges, edges + count);
  return CUDA_SUCCESS;
}

const HandlerEntry kHandlers[] = {
    reporting_entry<op::GraphInstantiate, instantiate>(),
    reporting_entry<op::GraphExecUpdate, exec_update>(),
    typed_entry<op::StreamCaptureInfo, capture_info>(),
};

}  // namespace

std::span<const HandlerEntry> graph_exec_handlers() { return kHandlers; }

}  // namespace scuda::server
