// Instantiation with parameters, executable-graph updates and capture info:
// their results name graphs and nodes, which go back as the session's ids
// (a node new to the session, e.g. made by a capture, takes the id the
// client proposed).
#include <optional>

#include "protocol/op_layouts.h"
#include "server/dispatch.h"
#include "server/session.h"
#include "server/typed_handler.h"
#include "server_gen.h"

namespace scuda::server {

namespace {

namespace op = protocol::op;
using protocol::Reader;
using protocol::Writer;

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

// u64 stream, u8 mode, u64 proposed graph id, u64 room, `room` proposed node
// ids. Replies u32 status, u64 capture id, graph id, u64 count; then, when
// count <= room, the dependency ids, u8 "edge data follows" and the edge data.
CUresult capture_info(Session& s, Reader& in, Writer& out) {
  const uint64_t stream_id = in.u64();
  const bool per_thread = in.u8() & protocol::kCopyPerThread;
  const uint64_t proposed_graph = in.u64();
  gen::OutHandles<CUgraphNode> proposed;
  const uint64_t room = in.u64();
  if (room > gen::kMaxArrayItems || room * 8 > in.remaining()) return kMalformed;
  proposed.proposed.resize(room);
  for (uint64_t& id : proposed.proposed) id = in.u64();
  if (!in.done()) return kMalformed;
  if (!s.handles().can_bind(proposed_graph) || !gen::can_bind_all(s, proposed))
    return CUDA_ERROR_INVALID_VALUE;
  CUstream stream = nullptr;
  if (!gen::resolve(s, stream_id, HandleKind::CUstream, &stream)) return CUDA_ERROR_INVALID_HANDLE;
  const DriverTable& d = s.driver();
  auto fn = per_thread ? d.cuStreamGetCaptureInfo_v3_ptsz : d.cuStreamGetCaptureInfo_v3;
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
  out.u32(status);
  out.u64(id);
  out.u64(s.handles().bind(proposed_graph, HandleKind::CUgraph, graph));
  out.u64(count);
  if (count > room) return CUDA_SUCCESS;
  for (size_t i = 0; i < count; ++i) out.u64(node_id(s, proposed.proposed[i], deps[i]));
  out.u8(edges != nullptr);
  if (edges) out.bytes(edges, count * sizeof(CUgraphEdgeData));
  return CUDA_SUCCESS;
}

const HandlerEntry kHandlers[] = {
    reporting_entry<op::GraphInstantiate, instantiate>(),
    reporting_entry<op::GraphExecUpdate, exec_update>(),
    {protocol::kOpStreamCaptureInfo, capture_info},
};

}  // namespace

std::span<const HandlerEntry> graph_exec_handlers() { return kHandlers; }

}  // namespace scuda::server
