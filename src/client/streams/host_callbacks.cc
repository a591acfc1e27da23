// A callback runs on the callback channel's thread while its stream waits
// for it (callback_channel.h). Before it runs, the replies of async
// device-to-host copies queued ahead of it are read into place, so that it
// sees their data as it would natively.
#include "client/streams/host_callbacks.h"

#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/op_calls.h"
#include "client/pools/route.h"
#include "client/runtime.h"
#include "client/state.h"
#include "client/streams/stream_capture.h"
#include "client/transport/callback_channel.h"
#include "client/transport/session.h"
#include "custom.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

// A graph node's callback has no request on the stream, so no copy
// replies are owed ahead of it.
constexpr uint64_t kNoRequest = UINT64_MAX;

struct Queued {
  std::function<void()> fn;
  uint64_t request = 0;  // the host-callback request's id, once it is sent; or kNoRequest
  bool replays = false;  // queued once a capture had begun: a graph may run it again
  // A host function's own function and data (not a stream callback's), for
  // cuGraphHostNodeGetParams of a node that runs it.
  CUhostFn host_fn = nullptr;
  void* host_data = nullptr;
};

}  // namespace

namespace parts {

struct HostCallbacks {
  std::mutex mu;
  std::condition_variable sent;
  std::condition_variable ran;
  std::map<uint64_t, Queued> queued;
  std::set<uint64_t> stream_pending;  // stream callbacks (not captured) yet to finish
};

}  // namespace parts

namespace {

using parts::HostCallbacks;

HostCallbacks& callbacks() { return client_state().host_callbacks.get(); }

// The callback is queued before its request is sent, since the stream may
// reach it as soon as the server has the request.
CUresult enqueue(CUstream stream, bool per_thread, std::function<void()> fn,
                 CUhostFn host_fn = nullptr, void* host_data = nullptr) {
  if (!connection()) return CUDA_ERROR_NOT_INITIALIZED;
  Route route;
  route.handle(handle_id(stream));
  if (CUresult rc = open_callback_channel(); rc != CUDA_SUCCESS) return rc;
  HostCallbacks& c = callbacks();
  const uint64_t id = new_handle_id();
  {
    std::lock_guard lock(c.mu);
    const bool replays = capture_active();
    c.queued[id] = {std::move(fn), 0, replays, host_fn, host_data};
    if (!replays) c.stream_pending.insert(id);
  }
  uint64_t request = 0;
  const CUresult rc = tell<protocol::op::HostCallback>(
      {handle_id(stream), static_cast<uint8_t>(per_thread ? protocol::kCopyPerThread : 0), id},
      &request);
  {
    std::lock_guard lock(c.mu);
    if (rc == CUDA_SUCCESS) {
      c.queued[id].request = request;
    } else {
      c.queued.erase(id);
      c.stream_pending.erase(id);
    }
  }
  c.sent.notify_all();
  if (rc != CUDA_SUCCESS) c.ran.notify_all();
  return rc;
}

CUresult launch_host_func(CUstream stream, CUhostFn fn, void* data, bool per_thread) {
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  return enqueue(
      stream, per_thread, [fn, data] { fn(data); }, fn, data);
}

CUresult add_callback(CUstream stream, CUstreamCallback fn, void* data, unsigned flags,
                      bool per_thread) {
  if (!fn || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return enqueue(stream, per_thread, [fn, stream, data] { fn(stream, CUDA_SUCCESS, data); });
}

}  // namespace

CUresult queue_graph_callback(CUhostFn fn, void* data, uint64_t* id, bool once) {
  if (!fn || !id) return CUDA_ERROR_INVALID_VALUE;
  if (!connection()) return CUDA_ERROR_NOT_INITIALIZED;
  if (CUresult rc = open_callback_channel(); rc != CUDA_SUCCESS) return rc;
  HostCallbacks& c = callbacks();
  *id = new_handle_id();
  std::lock_guard lock(c.mu);
  c.queued[*id] = {[fn, data] { fn(data); }, kNoRequest, !once, fn, data};
  return CUDA_SUCCESS;
}

void forget_callback(uint64_t id) {
  std::lock_guard lock(callbacks().mu);
  callbacks().queued.erase(id);
}

bool host_function_of(uint64_t id, CUhostFn* fn, void** data) {
  HostCallbacks& c = callbacks();
  std::lock_guard lock(c.mu);
  auto it = c.queued.find(id);
  if (it == c.queued.end() || !it->second.host_fn) return false;
  *fn = it->second.host_fn;
  *data = it->second.host_data;
  return true;
}

bool run_host_callback(uint64_t id) {
  HostCallbacks& c = callbacks();
  std::function<void()> fn;
  uint64_t request = 0;
  {
    std::unique_lock lock(c.mu);
    auto it = c.queued.end();
    // Reached means sent, but enqueue may not have noted the request's id yet.
    c.sent.wait(lock,
                [&] { return (it = c.queued.find(id)) == c.queued.end() || it->second.request; });
    if (it == c.queued.end()) return false;
    request = it->second.request;
    if (it->second.replays) {
      fn = it->second.fn;
    } else {
      fn = std::move(it->second.fn);
      c.queued.erase(it);
    }
  }
  if (request != kNoRequest) connection()->deliver_ahead_of(request);
  fn();
  {
    std::lock_guard lock(c.mu);
    c.stream_pending.erase(id);
  }
  c.ran.notify_all();
  return true;
}

void wait_for_queued_callbacks() {
  HostCallbacks& c = callbacks();
  std::unique_lock lock(c.mu);
  if (c.stream_pending.empty()) return;
  const uint64_t last = *c.stream_pending.rbegin();
  auto done = [&] { return c.stream_pending.empty() || *c.stream_pending.begin() > last; };
  // Sliced, so that a process on its way out stops waiting, and a wait
  // that lasts (a callback waiting for this very thread would never end)
  // is said.
  const auto since = std::chrono::steady_clock::now();
  bool said = false;
  while (!c.ran.wait_for(lock, std::chrono::milliseconds(100), done)) {
    if (exiting()) return;
    if (!said && std::chrono::steady_clock::now() - since > std::chrono::seconds(10)) {
      said = true;
      spdlog::warn(
          "an async copy from page-locked memory has waited 10 s for the {} stream "
          "callbacks queued ahead of it, which may fill its source",
          c.stream_pending.size());
    }
  }
}

}  // namespace scuda::client

using scuda::client::add_callback;
using scuda::client::launch_host_func;

// The destructor runs once, on the client, when the server's driver lets
// the last reference go (the server's object runs a stand-in).
CUresult scuda::client::custom::cuUserObjectCreate(CUuserObject* object, void* ptr,
                                                   CUhostFn destroy, unsigned int refs,
                                                   unsigned int flags) {
  if (!object || !destroy) return CUDA_ERROR_INVALID_VALUE;
  uint64_t id = 0;
  if (CUresult rc = scuda::client::queue_graph_callback(destroy, ptr, &id, true);
      rc != CUDA_SUCCESS)
    return rc;
  using UserObjectCreate = scuda::protocol::op::UserObjectCreate;
  UserObjectCreate::Reply reply;
  const CUresult rc = scuda::client::ask<UserObjectCreate>(
      {scuda::client::new_handle_id(), id, refs, flags}, &reply);
  if (rc != CUDA_SUCCESS) {
    scuda::client::forget_callback(id);
    return rc;
  }
  *object = scuda::client::handle_from_id<CUuserObject>(reply.object);
  return CUDA_SUCCESS;
}

// The entry points and their per-thread twins are generated (codegen,
// `twins`); these are their bodies.
namespace scuda::client::custom {

CUresult cuLaunchHostFunc(CUstream stream, CUhostFn fn, void* data, DefaultStream d) {
  return launch_host_func(stream, fn, data, per_thread(d));
}

CUresult cuStreamAddCallback(CUstream stream, CUstreamCallback fn, void* data, unsigned int flags,
                             DefaultStream d) {
  return add_callback(stream, fn, data, flags, per_thread(d));
}

}  // namespace scuda::client::custom
