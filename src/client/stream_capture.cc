// Stream capture. Capture runs on the server (begin and end are forwarded).
// Until this process first begins one, no stream can be capturing, so status
// queries are answered here: PyTorch asks several times per training step.
// After that they go to the server, since a capture can spread to other
// streams through events. An active capture's id, graph and dependencies are
// not carried back yet.
#include <atomic>

#include "client/runtime.h"
#include "forward.h"

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

CUresult capture_info(Query server, CUstream stream, CUstreamCaptureStatus* status,
                      cuuint64_t* id, CUgraph* graph, const CUgraphNode** deps,
                      const CUgraphEdgeData** edges, size_t* count) {
  const CUresult rc = is_capturing(server, stream, status);
  if (rc != CUDA_SUCCESS || *status == CU_STREAM_CAPTURE_STATUS_NONE) return rc;
  // As CUDA does, the other outputs are written only while capturing.
  if (id || graph || deps || edges || count)
    return scuda::client::unsupported("cuStreamGetCaptureInfo's id, graph or dependencies");
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode) {
  SCUDA_PASSTHROUGH(cuStreamBeginCapture_v2, stream, mode);
  return begun(forward::cuStreamBeginCapture_v2(stream, mode));
}

CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream stream, CUstreamCaptureMode mode) {
  SCUDA_PASSTHROUGH(cuStreamBeginCapture_v2_ptsz, stream, mode);
  return begun(forward::cuStreamBeginCapture_v2_ptsz(stream, mode));
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
  return capture_info(&forward::cuStreamIsCapturing, stream, status, id, graph, deps, edges,
                      count);
}

CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(CUstream stream, CUstreamCaptureStatus* status,
                                                cuuint64_t* id, CUgraph* graph,
                                                const CUgraphNode** deps,
                                                const CUgraphEdgeData** edges, size_t* count) {
  SCUDA_PASSTHROUGH(cuStreamGetCaptureInfo_v3_ptsz, stream, status, id, graph, deps, edges, count);
  return capture_info(&forward::cuStreamIsCapturing_ptsz, stream, status, id, graph, deps, edges,
                      count);
}

}  // extern "C"
