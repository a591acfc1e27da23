// Callbacks run after the connection's lock is released, so that one that
// breaks CUDA's rule and calls the driver gets an answer, not a deadlock.
// The stream does not wait for the client's callback to finish: work queued
// after it may start first (docs/protocol.md, "Host callbacks").
#include "client/host_callbacks.h"

#include <deque>
#include <functional>
#include <map>
#include <mutex>

#include "client/runtime.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

struct Callbacks {
  std::mutex mu;
  std::map<uint64_t, std::function<void()>> waiting;
  std::deque<std::function<void()>> reached;
};

Callbacks& callbacks() {
  static Callbacks* c = new Callbacks;  // never freed: used until exit
  return *c;
}

CUresult enqueue(CUstream stream, bool per_thread, std::function<void()> fn) {
  const uint64_t id = new_handle_id();
  {
    std::lock_guard lock(callbacks().mu);
    callbacks().waiting[id] = std::move(fn);
  }
  protocol::Writer w;
  w.u64(handle_id(stream));
  w.u8(per_thread ? protocol::kCopyPerThread : 0);
  w.u64(id);
  return post(protocol::kOpHostCallback, w);
}

CUresult launch_host_func(CUstream stream, CUhostFn fn, void* data, bool per_thread) {
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  return enqueue(stream, per_thread, [fn, data] { fn(data); });
}

CUresult add_callback(CUstream stream, CUstreamCallback fn, void* data, unsigned flags,
                      bool per_thread) {
  if (!fn || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  return enqueue(stream, per_thread, [fn, stream, data] { fn(stream, CUDA_SUCCESS, data); });
}

}  // namespace

void callback_reached(uint64_t id) {
  std::lock_guard lock(callbacks().mu);
  auto it = callbacks().waiting.find(id);
  if (it == callbacks().waiting.end()) return;
  callbacks().reached.push_back(std::move(it->second));
  callbacks().waiting.erase(it);
}

void run_reached_callbacks() {
  for (;;) {
    std::function<void()> fn;
    {
      std::lock_guard lock(callbacks().mu);
      if (callbacks().reached.empty()) return;
      fn = std::move(callbacks().reached.front());
      callbacks().reached.pop_front();
    }
    fn();
  }
}

}  // namespace scuda::client

using scuda::client::add_callback;
using scuda::client::launch_host_func;

extern "C" {

CUresult CUDAAPI cuLaunchHostFunc(CUstream stream, CUhostFn fn, void* data) {
  SCUDA_PASSTHROUGH(cuLaunchHostFunc, stream, fn, data);
  return launch_host_func(stream, fn, data, false);
}

CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream stream, CUhostFn fn, void* data) {
  SCUDA_PASSTHROUGH(cuLaunchHostFunc_ptsz, stream, fn, data);
  return launch_host_func(stream, fn, data, true);
}

CUresult CUDAAPI cuStreamAddCallback(CUstream stream, CUstreamCallback fn, void* data,
                                     unsigned int flags) {
  SCUDA_PASSTHROUGH(cuStreamAddCallback, stream, fn, data, flags);
  return add_callback(stream, fn, data, flags, false);
}

CUresult CUDAAPI cuStreamAddCallback_ptsz(CUstream stream, CUstreamCallback fn, void* data,
                                          unsigned int flags) {
  SCUDA_PASSTHROUGH(cuStreamAddCallback_ptsz, stream, fn, data, flags);
  return add_callback(stream, fn, data, flags, true);
}

}  // extern "C"
