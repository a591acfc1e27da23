// Capture-state queries. Capture itself runs on the server (begin and end
// are forwarded), so the status comes from there through cuStreamIsCapturing;
// the capture's id, graph and dependencies are not carried back yet.
#include "client/runtime.h"

namespace {

using IsCapturing = CUresult (*)(CUstream, CUstreamCaptureStatus*);

CUresult capture_info(IsCapturing is_capturing, CUstream stream, CUstreamCaptureStatus* status,
                      cuuint64_t* id, CUgraph* graph, const CUgraphNode** deps,
                      const CUgraphEdgeData** edges, size_t* count) {
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  const CUresult rc = is_capturing(stream, status);
  if (rc != CUDA_SUCCESS || *status == CU_STREAM_CAPTURE_STATUS_NONE) return rc;
  // As CUDA does, the other outputs are written only while capturing.
  if (id || graph || deps || edges || count)
    return scuda::client::unsupported("cuStreamGetCaptureInfo's id, graph or dependencies");
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuStreamGetCaptureInfo_v3(CUstream stream, CUstreamCaptureStatus* status,
                                           cuuint64_t* id, CUgraph* graph,
                                           const CUgraphNode** deps, const CUgraphEdgeData** edges,
                                           size_t* count) {
  SCUDA_PASSTHROUGH(cuStreamGetCaptureInfo_v3, stream, status, id, graph, deps, edges, count);
  return capture_info(&cuStreamIsCapturing, stream, status, id, graph, deps, edges, count);
}

CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream, CUstreamCaptureStatus*);

CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(CUstream stream, CUstreamCaptureStatus* status,
                                                cuuint64_t* id, CUgraph* graph,
                                                const CUgraphNode** deps,
                                                const CUgraphEdgeData** edges, size_t* count) {
  SCUDA_PASSTHROUGH(cuStreamGetCaptureInfo_v3_ptsz, stream, status, id, graph, deps, edges, count);
  return capture_info(&cuStreamIsCapturing_ptsz, stream, status, id, graph, deps, edges, count);
}

}  // extern "C"
