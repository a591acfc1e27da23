// Stream capture. Capture runs on the server (begin and end are forwarded).
// The client keeps the captures this process has begun and not yet ended:
// while there are none, no stream can be capturing, so status queries are
// answered here (PyTorch asks several times per step, also while it replays
// graphs) and copies and callbacks need not learn whether they were
// captured. While one is active, queries go to the server, since a capture
// can spread to other streams through events; but once the server has told
// a capture's id and graph, a query of the stream that began it asking
// for no dependencies is answered here until the capture ends (PyTorch's
// allocator asks that for each allocation during a capture). Such a query
// still reads a capture that an illegal call invalidated as active: its
// end reports the invalidation. An active capture's graph and dependency
// nodes come back as client ids (the server binds nodes new to the session
// to ids proposed here).
#include "client/streams/stream_capture.h"

#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "client/op_calls.h"
#include "client/runtime.h"
#include "client/state.h"
#include "common/lock_order.h"
#include "forward.h"
#include "protocol/ops.h"

namespace {

namespace forward = scuda::client::forward;

using Query = CUresult (*)(CUstream, CUstreamCaptureStatus*);

}  // namespace

namespace scuda::client::parts {

// The streams whose capture this process began and has not seen end. A
// default stream is the calling thread's own when per-thread, so its key
// names the thread too.
class ActiveCaptures {
 public:
  using Key = std::pair<uint64_t, std::thread::id>;

  // The thread's own default stream has one key however it is named.
  static Key key(CUstream stream, bool per_thread) {
    const uint64_t id = scuda::client::handle_id(stream);
    const uint64_t own = scuda::client::handle_id(CU_STREAM_PER_THREAD);
    const bool threads_own = id == own || (per_thread && !id);
    return threads_own ? Key{own, std::this_thread::get_id()} : Key{id, std::thread::id{}};
  }
  // Counts the capture before its request is sent, so that no call of
  // another thread sent after it takes the process for one without captures.
  void add(const Key& k) {
    std::lock_guard lock(mu_);
    const Known fresh{++begun_};
    if (keys_.emplace(k, fresh).second) count_.fetch_add(1);
    else keys_[k] = fresh;  // begun again: its id is new
  }
  void remove(const Key& k) {
    std::lock_guard lock(mu_);
    if (keys_.erase(k)) count_.fetch_sub(1);
  }
  bool contains(const Key& k) {
    std::lock_guard lock(mu_);
    return keys_.count(k) != 0;
  }
  bool any() const { return count_.load() != 0; }
  // Which capture `k` began, as a number that a new begin changes; 0 when
  // it began none.
  uint64_t begun(const Key& k) {
    std::lock_guard lock(mu_);
    auto it = keys_.find(k);
    return it == keys_.end() ? 0 : it->second.begun;
  }
  // The server said capture `id` of graph `graph` is active on the stream
  // that began it, asked while `k`'s capture was `begun`: kept only if no
  // other capture has begun there since.
  void learn(const Key& k, uint64_t begun, cuuint64_t id, CUgraph graph) {
    std::lock_guard lock(mu_);
    auto it = keys_.find(k);
    if (it != keys_.end() && it->second.begun == begun) it->second = Known{begun, true, id, graph};
  }
  // What the server said of the capture `k` began, if it said it.
  bool known(const Key& k, cuuint64_t* id, CUgraph* graph) {
    std::lock_guard lock(mu_);
    auto it = keys_.find(k);
    if (it == keys_.end() || !it->second.told) return false;
    *id = it->second.id;
    *graph = it->second.graph;
    return true;
  }

 private:
  struct Known {
    uint64_t begun = 0;
    bool told = false;
    cuuint64_t id = 0;
    CUgraph graph = nullptr;
  };
  scuda::RankedMutex mu_{scuda::LockRank::kLeaf, "stream captures"};
  std::map<Key, Known> keys_;
  uint64_t begun_ = 0;
  std::atomic<int> count_{0};
};

}  // namespace scuda::client::parts

namespace {

using scuda::client::parts::ActiveCaptures;

ActiveCaptures& active() { return scuda::client::client_state().active_captures.get(); }

template <class Begin>
CUresult begin(CUstream stream, bool per_thread, Begin send) {
  const auto k = ActiveCaptures::key(stream, per_thread);
  const bool known = active().contains(k);
  active().add(k);
  const CUresult rc = send();
  if (rc != CUDA_SUCCESS && !known) active().remove(k);
  return rc;
}

// The capture of `stream` is over once its end succeeds or reports the
// capture invalidated or unjoined; after any other error the server says
// whether the stream still captures.
CUresult end(CUstream stream, bool per_thread, CUgraph* graph, Query query) {
  const auto k = ActiveCaptures::key(stream, per_thread);
  const CUresult rc = per_thread ? forward::cuStreamEndCapture_ptsz(stream, graph)
                                 : forward::cuStreamEndCapture(stream, graph);
  // A stream that began no capture here has nothing to end, and no question to ask.
  if (!active().contains(k)) return rc;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  const bool over =
      rc == CUDA_SUCCESS || rc == CUDA_ERROR_STREAM_CAPTURE_INVALIDATED ||
      rc == CUDA_ERROR_STREAM_CAPTURE_UNJOINED ||
      (query(stream, &status) == CUDA_SUCCESS && status == CU_STREAM_CAPTURE_STATUS_NONE);
  if (over) active().remove(k);
  return rc;
}

CUresult is_capturing(Query server, CUstream stream, CUstreamCaptureStatus* status) {
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  if (active().any()) return server(stream, status);
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
  namespace op = scuda::protocol::op;
  op::StreamCaptureInfo::Request q{
      handle_id(stream), static_cast<uint8_t>(per_thread ? scuda::protocol::kCopyPerThread : 0),
      new_handle_id(), std::vector<uint64_t>(room)};
  for (uint64_t& id : q.proposed_nodes) id = new_handle_id();
  op::StreamCaptureInfo::Reply reply;
  if (CUresult rc = scuda::client::ask<op::StreamCaptureInfo>(q, &reply); rc != CUDA_SUCCESS)
    return rc;
  *count = reply.count;
  const bool fits = reply.count <= room;
  if (reply.count > kMaxDependencies || reply.nodes.size() != (fits ? reply.count : 0) ||
      (reply.edges && reply.edges->size() != reply.nodes.size()))
    return bad_reply("cuStreamGetCaptureInfo");
  last.status = static_cast<CUstreamCaptureStatus>(reply.status);
  last.id = reply.id;
  last.graph = handle_from_id<CUgraph>(reply.graph);
  if (!fits) return CUDA_SUCCESS;
  last.deps.resize(reply.count);
  for (size_t i = 0; i < reply.nodes.size(); ++i)
    last.deps[i] = handle_from_id<CUgraphNode>(reply.nodes[i]);
  last.has_edges = reply.edges.has_value();
  last.edges = reply.edges ? std::move(*reply.edges) : std::vector<CUgraphEdgeData>{};
  return CUDA_SUCCESS;
}

CUresult capture_info(Query server, bool per_thread, CUstream stream, CUstreamCaptureStatus* status,
                      cuuint64_t* id, CUgraph* graph, const CUgraphNode** deps,
                      const CUgraphEdgeData** edges, size_t* count) {
  if (!(id || graph || deps || edges || count) || !active().any())
    return is_capturing(server, stream, status);
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  const auto k = ActiveCaptures::key(stream, per_thread);
  cuuint64_t known_id = 0;
  CUgraph known_graph = nullptr;
  if (!deps && !edges && !count && active().known(k, &known_id, &known_graph)) {
    *status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    if (id) *id = known_id;
    if (graph) *graph = known_graph;
    return CUDA_SUCCESS;
  }
  const uint64_t begun = active().begun(k);
  uint64_t n = 0;
  for (uint64_t room = kFirstRoom;; room = n) {
    if (CUresult rc = ask(stream, per_thread, room, &n); rc != CUDA_SUCCESS) return rc;
    if (n <= room) break;
  }
  if (last.status == CU_STREAM_CAPTURE_STATUS_ACTIVE && begun)
    active().learn(k, begun, last.id, last.graph);
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

bool scuda::client::capture_active() { return active().any(); }

namespace scuda::client {
namespace {

// The session's capture status query for the entry point's default stream.
Query status_query(DefaultStream d) {
  if (per_thread(d)) return &forward::cuStreamIsCapturing_ptsz;
  return &forward::cuStreamIsCapturing;
}

}  // namespace

// The entry points and their per-thread twins are generated (codegen,
// `twins`); these are their bodies.
namespace custom {

CUresult cuStreamBeginCapture_v2(CUstream stream, CUstreamCaptureMode mode, DefaultStream d) {
  return begin(stream, per_thread(d),
               [&] { return forward::cuStreamBeginCapture_v2(stream, mode, d); });
}

CUresult cuStreamBeginCaptureToGraph(CUstream stream, CUgraph graph, const CUgraphNode* deps,
                                     const CUgraphEdgeData* edges, size_t count,
                                     CUstreamCaptureMode mode, DefaultStream d) {
  return begin(stream, per_thread(d), [&] {
    return forward::cuStreamBeginCaptureToGraph(stream, graph, deps, edges, count, mode, d);
  });
}

CUresult cuStreamEndCapture(CUstream stream, CUgraph* graph, DefaultStream d) {
  return end(stream, per_thread(d), graph, status_query(d));
}

CUresult cuStreamIsCapturing(CUstream stream, CUstreamCaptureStatus* status, DefaultStream d) {
  return is_capturing(status_query(d), stream, status);
}

CUresult cuStreamGetCaptureInfo_v3(CUstream stream, CUstreamCaptureStatus* status, cuuint64_t* id,
                                   CUgraph* graph, const CUgraphNode** deps,
                                   const CUgraphEdgeData** edges, size_t* count, DefaultStream d) {
  return capture_info(status_query(d), per_thread(d), stream, status, id, graph, deps, edges,
                      count);
}

}  // namespace custom
}  // namespace scuda::client
