// Instantiation with parameters, executable-graph updates and capture info:
// their results name graphs and nodes, which go back as the session's ids
// (a node new to the session, e.g. made by a capture, takes the id the
// client proposed).
#include "protocol/ops.h"
#include "server/dispatch.h"
#include "server/session.h"
#include "server_gen.h"

namespace scuda::server {

namespace {

using protocol::Reader;
using protocol::Writer;

uint64_t node_id(Session& s, uint64_t proposed, CUgraphNode node) {
  return s.handles().bind(proposed, HandleKind::CUgraphNode, node);
}

// u64 proposed exec, u64 graph, u64 flags, u64 upload stream, u8 mode, u64
// proposed error node. Replies exec id, u32 result, error node id, also on
// failure.
CUresult instantiate(Session& s, Reader& in, Writer& out) {
  const uint64_t proposed = in.u64();
  const uint64_t graph_id = in.u64();
  CUDA_GRAPH_INSTANTIATE_PARAMS params{};
  params.flags = in.u64();
  const uint64_t stream_id = in.u64();
  const bool per_thread = in.u8() & protocol::kCopyPerThread;
  const uint64_t proposed_node = in.u64();
  if (!in.done()) return kMalformed;
  if (!s.handles().can_bind(proposed) || !s.handles().can_bind(proposed_node) ||
      proposed == proposed_node)
    return CUDA_ERROR_INVALID_VALUE;
  CUgraph graph = nullptr;
  if (!gen::resolve(s, graph_id, HandleKind::CUgraph, &graph) ||
      !gen::resolve(s, stream_id, HandleKind::CUstream, &params.hUploadStream))
    return CUDA_ERROR_INVALID_HANDLE;
  const DriverTable& d = s.driver();
  auto fn = per_thread ? d.cuGraphInstantiateWithParams_ptsz : d.cuGraphInstantiateWithParams;
  if (!fn) return CUDA_ERROR_NOT_SUPPORTED;
  CUgraphExec exec = nullptr;
  const CUresult rc = fn(&exec, graph, &params);
  out.u64(rc == CUDA_SUCCESS ? s.handles().bind(proposed, HandleKind::CUgraphExec, exec) : 0);
  out.u32(params.result_out);
  out.u64(node_id(s, proposed_node, params.hErrNode_out));
  return rc;
}

// u64 exec, u64 graph, two proposed node ids. Replies u32 result and the
// error node and error-from node ids, also on failure.
CUresult exec_update(Session& s, Reader& in, Writer& out) {
  const uint64_t exec_id = in.u64();
  const uint64_t graph_id = in.u64();
  const uint64_t proposed[2] = {in.u64(), in.u64()};
  if (!in.done()) return kMalformed;
  if (!s.handles().can_bind(proposed[0]) || !s.handles().can_bind(proposed[1]) ||
      proposed[0] == proposed[1])
    return CUDA_ERROR_INVALID_VALUE;
  CUgraphExec exec = nullptr;
  CUgraph graph = nullptr;
  if (!gen::resolve(s, exec_id, HandleKind::CUgraphExec, &exec) ||
      !gen::resolve(s, graph_id, HandleKind::CUgraph, &graph))
    return CUDA_ERROR_INVALID_HANDLE;
  if (!s.driver().cuGraphExecUpdate_v2) return CUDA_ERROR_NOT_SUPPORTED;
  CUgraphExecUpdateResultInfo info{};
  const CUresult rc = s.driver().cuGraphExecUpdate_v2(exec, graph, &info);
  out.u32(info.result);
  out.u64(node_id(s, proposed[0], info.errorNode));
  out.u64(node_id(s, proposed[1], info.errorFromNode));
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
    {protocol::kOpGraphInstantiate, instantiate},
    {protocol::kOpGraphExecUpdate, exec_update},
    {protocol::kOpStreamCaptureInfo, capture_info},
};

}  // namespace

std::span<const HandlerEntry> graph_exec_handlers() { return kHandlers; }

}  // namespace scuda::server
