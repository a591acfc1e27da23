// Queries of finished work answered here: once the session has said that a
// stream's or an event's work is done, the answer stays true until new work
// could change it, so asking again sends nothing.
//
// - A stream is done for as long as the process sends no device work at all
//   (work_epoch.h): any request that may enqueue work, on any stream, ends
//   what is known, since the legacy stream ties streams together.
// - An event is done until it is recorded again: by cuEventRecord, or by a
//   graph launch (an event record node). Events shared with another process
//   (opened from its handle, or exported to it) may be recorded there, so
//   they are always asked.
#include <cuda.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <utility>

#include "client/contexts/context.h"
#include "client/runtime.h"
#include "client/state.h"
#include "client/streams/work_epoch.h"
#include "common/lock_order.h"
#include "custom.h"
#include "forward.h"

namespace scuda::client {

namespace parts {

struct FinishedWork {
  RankedMutex mu{LockRank::kLeaf, "FinishedWork::mu"};
  // (stream, context) -> the work epoch at which the stream was seen done.
  std::map<std::pair<CUstream, uint64_t>, uint64_t> streams;
  // event -> its record generation when seen done.
  std::map<CUevent, uint64_t> events;
  std::map<CUevent, uint64_t> recorded;  // event -> how often recorded
  std::set<CUevent> foreign;             // shared with another process
};

}  // namespace parts

namespace {

parts::FinishedWork& finished() { return client_state().finished_work.get(); }

// Graph launches may record any event.
std::atomic<uint64_t> g_graph_launches{0};
// Bumped when an event is recorded, shared or destroyed: a thread's last
// done answer about an event holds while neither count has moved, so that
// asking again takes no lock shared between threads.
std::atomic<uint64_t> g_event_changes{0};

// The thread's last stream and event seen done.
struct LastDone {
  bool stream_known = false;
  std::pair<CUstream, uint64_t> stream{};
  uint64_t epoch = 0;
  CUevent event = nullptr;
  uint64_t event_changes = 0;
  uint64_t graph_launches = 0;
};

LastDone& last_done() {
  thread_local LastDone last;
  return last;
}

}  // namespace

void note_graph_launch() { g_graph_launches.fetch_add(1, std::memory_order_acq_rel); }

namespace {

uint64_t generation(CUevent event) {
  auto it = finished().recorded.find(event);
  return (it == finished().recorded.end() ? 0 : it->second) +
         (g_graph_launches.load(std::memory_order_acquire) << 32);
}

std::pair<CUstream, uint64_t> stream_key(CUstream stream) { return {stream, current_context_id()}; }

// Asks `query` unless the stream is known done at the current epoch; a
// done answer is kept with the epoch read before asking.
template <class Query>
CUresult stream_done(CUstream stream, Query query) {
  const auto key = stream_key(stream);
  const uint64_t epoch = work_epoch();
  LastDone& last = last_done();
  if (last.stream_known && last.stream == key && last.epoch == epoch) return CUDA_SUCCESS;
  {
    std::lock_guard lock(finished().mu);
    auto it = finished().streams.find(key);
    if (it != finished().streams.end() && it->second == epoch) {
      last = {true, key, epoch, last.event, last.event_changes, last.graph_launches};
      return CUDA_SUCCESS;
    }
  }
  const CUresult rc = query();
  if (rc == CUDA_SUCCESS) {
    std::lock_guard lock(finished().mu);
    finished().streams[key] = epoch;
    last = {true, key, epoch, last.event, last.event_changes, last.graph_launches};
  }
  return rc;
}

template <class Query>
CUresult event_done(CUevent event, Query query) {
  LastDone& last = last_done();
  const uint64_t changes = g_event_changes.load(std::memory_order_acquire);
  const uint64_t graphs = g_graph_launches.load(std::memory_order_acquire);
  if (event && last.event == event && last.event_changes == changes &&
      last.graph_launches == graphs)
    return CUDA_SUCCESS;
  uint64_t gen = 0;
  {
    std::lock_guard lock(finished().mu);
    gen = generation(event);
    auto it = finished().events.find(event);
    if (it != finished().events.end() && it->second == gen && event) {
      last.event = event, last.event_changes = changes, last.graph_launches = graphs;
      return CUDA_SUCCESS;
    }
  }
  const CUresult rc = query();
  std::lock_guard lock(finished().mu);
  if (rc == CUDA_SUCCESS && event && !finished().foreign.count(event)) {
    finished().events[event] = gen;
    last.event = event, last.event_changes = changes, last.graph_launches = graphs;
  }
  return rc;
}

void recorded(CUevent event) {
  g_event_changes.fetch_add(1, std::memory_order_acq_rel);
  std::lock_guard lock(finished().mu);
  ++finished().recorded[event];
  finished().events.erase(event);
}

void shared_with_others(CUevent event) {
  g_event_changes.fetch_add(1, std::memory_order_acq_rel);
  std::lock_guard lock(finished().mu);
  finished().foreign.insert(event);
  finished().events.erase(event);
}

void forget_event(CUevent event) {
  g_event_changes.fetch_add(1, std::memory_order_acq_rel);
  std::lock_guard lock(finished().mu);
  finished().recorded.erase(event);
  finished().events.erase(event);
  finished().foreign.erase(event);
}

}  // namespace

}  // namespace scuda::client

namespace client = scuda::client;
namespace forward = scuda::client::forward;

// The entry points and their per-thread twins are generated (codegen,
// `twins`); these are their bodies.
namespace scuda::client::custom {

CUresult cuStreamQuery(CUstream stream, DefaultStream d) {
  return client::stream_done(stream, [&] { return forward::cuStreamQuery(stream, d); });
}

CUresult cuStreamSynchronize(CUstream stream, DefaultStream d) {
  return client::stream_done(stream, [&] { return forward::cuStreamSynchronize(stream, d); });
}

CUresult cuEventRecord(CUevent event, CUstream stream, DefaultStream d) {
  client::recorded(event);
  return forward::cuEventRecord(event, stream, d);
}

CUresult cuEventRecordWithFlags(CUevent event, CUstream stream, unsigned int flags,
                                DefaultStream d) {
  client::recorded(event);
  return forward::cuEventRecordWithFlags(event, stream, flags, d);
}

CUresult cuGraphLaunch(CUgraphExec exec, CUstream stream, DefaultStream d) {
  client::note_graph_launch();
  return forward::cuGraphLaunch(exec, stream, d);
}

}  // namespace scuda::client::custom

CUresult scuda::client::custom::cuEventQuery(CUevent event) {
  return client::event_done(event, [&] { return forward::cuEventQuery(event); });
}

CUresult scuda::client::custom::cuEventSynchronize(CUevent event) {
  return client::event_done(event, [&] { return forward::cuEventSynchronize(event); });
}

CUresult scuda::client::custom::cuEventDestroy_v2(CUevent event) {
  client::forget_event(event);
  return forward::cuEventDestroy_v2(event);
}

CUresult scuda::client::custom::cuIpcOpenEventHandle(CUevent* event, CUipcEventHandle handle) {
  const CUresult rc = forward::cuIpcOpenEventHandle(event, handle);
  if (rc == CUDA_SUCCESS) client::shared_with_others(*event);
  return rc;
}

CUresult scuda::client::custom::cuIpcGetEventHandle(CUipcEventHandle* handle, CUevent event) {
  const CUresult rc = forward::cuIpcGetEventHandle(handle, event);
  if (rc == CUDA_SUCCESS) client::shared_with_others(event);
  return rc;
}
