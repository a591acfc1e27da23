// Stream capture. Capture runs on the server (begin and end are forwarded).
// Until this process first begins one, no stream can be capturing, so status
// queries are answered here: PyTorch asks several times per training step.
// After that they go to the server, since a capture can spread to other
// streams through events. An active capture's graph and dependency nodes
// come back as client ids (the server binds nodes new to the session to ids
// proposed here).
#include "client/stream_capture.h"

#include <atomic>
#include <vector>

#include "client/runtime.h"
#include "forward.h"
#include "protocol/ops.h"

namespace {

namespace forward = scuda::client::forward;

std::atomic<bool> any_capture_begun{false};

CUresult begun(CUresult rc) {
  if (rc == CUDA_SUCCESS) any_capture_begun.store(true);
  return rc;
}

using Query = CUresult (*)(CUstream, CUstreamCaptureStatus*);

CUresult is_capturing(Query server, CUstream stream, CUstreamCaptureStatus* status) {
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  if (any_capture_begun.load()) return server(stream, status);
  *status = CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

constexpr uint64_t kFirstRoom = 8;
constexpr uint64_t kMaxDependencies = uint64_t{1} << 20;

// The driver's answer, kept as the driver keeps its own: the dependency
// array stays valid until this thread asks again.
struct CaptureInfo {
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t id = 0;
  CUgraph graph = nullptr;
  std::vector<CUgraphNode> deps;
  std::vector<CUgraphEdgeData> edges;
  bool has_edges = false;
};

thread_local CaptureInfo last;

// Sends room for `room` dependencies; returns how many there are, so that
// a caller with too little room asks again.
CUresult ask(CUstream stream, bool per_thread, uint64_t room, uint64_t* count) {
  using namespace scuda::client;
  scuda::protocol::Writer w;
  w.u64(handle_id(stream));
  w.u8(per_thread ? scuda::protocol::kCopyPerThread : 0);
  w.u64(new_handle_id());
  w.u64(room);
  for (uint64_t i = 0; i < room; ++i) w.u64(new_handle_id());
  std::vector<uint8_t> reply;
  if (CUresult rc = call(scuda::protocol::kOpStreamCaptureInfo, w, &reply); rc != CUDA_SUCCESS)
    return rc;
  scuda::protocol::Reader r(reply);
  last.status = static_cast<CUstreamCaptureStatus>(r.u32());
  last.id = r.u64();
  last.graph = handle_from_id<CUgraph>(r.u64());
  *count = r.u64();
  if (*count > kMaxDependencies) return bad_reply("cuStreamGetCaptureInfo");
  if (*count > room) return r.done() ? CUDA_SUCCESS : bad_reply("cuStreamGetCaptureInfo");
  last.deps.resize(*count);
  for (CUgraphNode& n : last.deps) n = handle_from_id<CUgraphNode>(r.u64());
  last.has_edges = r.boolean();
  last.edges.resize(last.has_edges ? *count : 0);
  for (CUgraphEdgeData& e : last.edges) e = r.get<CUgraphEdgeData>();
  return r.done() ? CUDA_SUCCESS : bad_reply("cuStreamGetCaptureInfo");
}

CUresult capture_info(Query server, bool per_thread, CUstream stream,
                      CUstreamCaptureStatus* status, cuuint64_t* id, CUgraph* graph,
                      const CUgraphNode** deps, const CUgraphEdgeData** edges, size_t* count) {
  if (!(id || graph || deps || edges || count) || !any_capture_begun.load())
    return is_capturing(server, stream, status);
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  uint64_t n = 0;
  for (uint64_t room = kFirstRoom;; room = n) {
    if (CUresult rc = ask(stream, per_thread, room, &n); rc != CUDA_SUCCESS) return rc;
    if (n <= room) break;
  }
  *status = last.status;
  // As CUDA does, the other outputs are written only while capturing.
  if (last.status == CU_STREAM_CAPTURE_STATUS_NONE) return CUDA_SUCCESS;
  if (id) *id = last.id;
  if (graph) *graph = last.graph;
  if (deps) *deps = last.deps.data();
  if (edges) *edges = last.has_edges ? last.edges.data() : nullptr;
  if (count) *count = n;
  return CUDA_SUCCESS;
}

}  // namespace

bool scuda::client::capture_begun() { return any_capture_begun.load(); }

extern "C" {

CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode) {
  SCUDA_PASSTHROUGH(cuStreamBeginCapture_v2, stream, mode);
  return begun(forward::cuStreamBeginCapture_v2(stream, mode));
}

CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream stream, CUstreamCaptureMode mode) {
  SCUDA_PASSTHROUGH(cuStreamBeginCapture_v2_ptsz, stream, mode);
  return begun(forward::cuStreamBeginCapture_v2_ptsz(stream, mode));
}

CUresult CUDAAPI cuStreamBeginCaptureToGraph(CUstream stream, CUgraph graph,
                                             const CUgraphNode* deps, const CUgraphEdgeData* edges,
                                             size_t count, CUstreamCaptureMode mode) {
  SCUDA_PASSTHROUGH(cuStreamBeginCaptureToGraph, stream, graph, deps, edges, count, mode);
  return begun(forward::cuStreamBeginCaptureToGraph(stream, graph, deps, edges, count, mode));
}

CUresult CUDAAPI cuStreamBeginCaptureToGraph_ptsz(CUstream stream, CUgraph graph,
                                                  const CUgraphNode* deps,
                                                  const CUgraphEdgeData* edges, size_t count,
                                                  CUstreamCaptureMode mode) {
  SCUDA_PASSTHROUGH(cuStreamBeginCaptureToGraph_ptsz, stream, graph, deps, edges, count, mode);
  return begun(forward::cuStreamBeginCaptureToGraph_ptsz(stream, graph, deps, edges, count, mode));
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status) {
  SCUDA_PASSTHROUGH(cuStreamIsCapturing, stream, status);
  return is_capturing(&forward::cuStreamIsCapturing, stream, status);
}

CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream stream, CUstreamCaptureStatus* status) {
  SCUDA_PASSTHROUGH(cuStreamIsCapturing_ptsz, stream, status);
  return is_capturing(&forward::cuStreamIsCapturing_ptsz, stream, status);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v3(CUstream stream, CUstreamCaptureStatus* status,
                                           cuuint64_t* id, CUgraph* graph,
                                           const CUgraphNode** deps, const CUgraphEdgeData** edges,
                                           size_t* count) {
  SCUDA_PASSTHROUGH(cuStreamGetCaptureInfo_v3, stream, status, id, graph, deps, edges, count);
  return capture_info(&forward::cuStreamIsCapturing, false, stream, status, id, graph, deps, edges,
                      count);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(CUstream stream, CUstreamCaptureStatus* status,
                                                cuuint64_t* id, CUgraph* graph,
                                                const CUgraphNode** deps,
                                                const CUgraphEdgeData** edges, size_t* count) {
  SCUDA_PASSTHROUGH(cuStreamGetCaptureInfo_v3_ptsz, stream, status, id, graph, deps, edges, count);
  return capture_info(&forward::cuStreamIsCapturing_ptsz, true, stream, status, id, graph, deps,
                      edges, count);
}

}  // extern "C"
