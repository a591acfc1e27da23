// Stream capture: while a stream captures, its work becomes nodes of the
// capture's graph, each depending on the stream's last nodes. An event
// recorded in a capture carries those nodes to the streams that wait on it,
// which join the capture (fork and join across streams).
#include <cuda.h>

#include <algorithm>
#include <map>
#include <memory>

#include "graph.h"
#include "state.h"
#include "work.h"

using namespace scuda_double;

namespace {

struct Capture {
  uintptr_t graph = 0;
  uint64_t id = 0;
  uintptr_t origin = 0;  // the stream that began it, the only one that may end it
  std::vector<CUgraphNode> deps;
};

struct Captures {
  uint64_t next_id = 1;
  std::map<uintptr_t, Capture> by_stream;
  std::map<uintptr_t, Capture> by_event;  // the capture an event was recorded in
};

Captures& captures() {
  static Captures* c = new Captures;  // never freed: used until exit
  return *c;
}

uintptr_t key(const void* handle) { return reinterpret_cast<uintptr_t>(handle); }

Capture* capture_of(CUstream stream) {
  auto it = captures().by_stream.find(key(stream));
  return it == captures().by_stream.end() ? nullptr : &it->second;
}

std::vector<uintptr_t> ids(const std::vector<CUgraphNode>& nodes) {
  std::vector<uintptr_t> out;
  for (CUgraphNode n : nodes) out.push_back(key(n));
  return out;
}

}  // namespace

bool scuda_double::capturing(CUstream stream) { return capture_of(stream) != nullptr; }

CUresult scuda_double::submit(CUstream stream, const Work& work) {
  Capture* c = capture_of(stream);
  if (c == nullptr) return run_work(work);
  uintptr_t node = 0;
  if (CUresult rc = add_node(c->graph, ids(c->deps), work, &node); rc != CUDA_SUCCESS) return rc;
  c->deps = {as_handle<CUgraphNode>(node)};
  return CUDA_SUCCESS;
}

bool scuda_double::capture_record(CUevent event, CUstream stream) {
  Capture* c = capture_of(stream);
  if (c == nullptr) return false;
  captures().by_event[key(event)] = *c;
  return true;
}

bool scuda_double::capture_wait(CUstream stream, CUevent event) {
  auto it = captures().by_event.find(key(event));
  if (it == captures().by_event.end()) return false;
  Capture* c = capture_of(stream);
  if (c == nullptr) {
    captures().by_stream[key(stream)] = it->second;
    return true;
  }
  for (CUgraphNode n : it->second.deps)
    if (std::find(c->deps.begin(), c->deps.end(), n) == c->deps.end()) c->deps.push_back(n);
  return true;
}

extern "C" {

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode) {
  Call call = begin_on_stream(hStream);
  if (call.status != CUDA_SUCCESS) return call.status;
  if (mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
  if (capture_of(hStream) != nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  Capture c;
  c.graph = graphs().graphs.add(std::make_unique<Graph>());
  c.id = captures().next_id++;
  c.origin = key(hStream);
  captures().by_stream[key(hStream)] = c;
  return CUDA_SUCCESS;
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph* phGraph) {
  Call call = begin_on_stream(hStream);
  if (call.status != CUDA_SUCCESS) return call.status;
  if (phGraph == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Capture* c = capture_of(hStream);
  if (c == nullptr) return CUDA_ERROR_ILLEGAL_STATE;
  if (c->origin != key(hStream)) return CUDA_ERROR_STREAM_CAPTURE_UNMATCHED;
  const uint64_t id = c->id;
  *phGraph = as_handle<CUgraph>(c->graph);
  std::erase_if(captures().by_stream, [&](const auto& kv) { return kv.second.id == id; });
  std::erase_if(captures().by_event, [&](const auto& kv) { return kv.second.id == id; });
  return CUDA_SUCCESS;
}

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus* status) {
  Call call = begin_on_stream(hStream);
  if (call.status != CUDA_SUCCESS) return call.status;
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *status = capture_of(hStream) ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  return CUDA_SUCCESS;
}

CUresult cuStreamGetCaptureInfo_v3(CUstream hStream, CUstreamCaptureStatus* status, cuuint64_t* id,
                                   CUgraph* graph, const CUgraphNode** deps,
                                   const CUgraphEdgeData** edges, size_t* count) {
  Call call = begin_on_stream(hStream);
  if (call.status != CUDA_SUCCESS) return call.status;
  if (status == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const Capture* c = capture_of(hStream);
  *status = c ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
  if (c == nullptr) return CUDA_SUCCESS;
  if (id) *id = c->id;
  if (graph) *graph = as_handle<CUgraph>(c->graph);
  if (deps) *deps = c->deps.data();
  if (edges) *edges = nullptr;  // all default edges
  if (count) *count = c->deps.size();
  return CUDA_SUCCESS;
}

}  // extern "C"
