// Answers about a stream that never change once the driver has given them:
// its context and its priority, and the priority range of a device. Graph
// replays in PyTorch ask them several times per step; each is asked of the
// server once and kept. Handle ids are never reused in a process, so an
// answer kept for a destroyed stream is never given for another one. The
// default streams (NULL, legacy, per-thread) stand for the calling thread's
// context and are always asked.
#include <cuda.h>

#include <map>
#include <mutex>
#include <utility>

#include "client/runtime.h"
#include "common/lock_order.h"
#include "custom.h"
#include "forward.h"

namespace {

namespace forward = scuda::client::forward;
using scuda::client::handle_id;

template <class Value>
class Kept {
 public:
  // The value kept for `key`, or the one `ask` gives, kept when it succeeds.
  template <class Ask>
  CUresult get(uint64_t key, Value* out, Ask ask) {
    {
      std::lock_guard lock(mu_);
      if (auto it = values_.find(key); it != values_.end()) {
        *out = it->second;
        return CUDA_SUCCESS;
      }
    }
    const CUresult rc = ask(out);
    if (rc == CUDA_SUCCESS) {
      std::lock_guard lock(mu_);
      values_.emplace(key, *out);
    }
    return rc;
  }

 private:
  scuda::RankedMutex mu_{scuda::LockRank::kLeaf, "stream answers"};
  std::map<uint64_t, Value> values_;
};

// A stream's key, or 0 for a default stream, whose answers are not kept.
uint64_t stream_key(CUstream stream) {
  const uint64_t id = handle_id(stream);
  return id > handle_id(CU_STREAM_PER_THREAD) ? id : 0;
}

template <class Value, class Ask>
CUresult kept_for_stream(Kept<Value>& kept, CUstream stream, Value* out, Ask ask) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  const uint64_t key = stream_key(stream);
  return key ? kept.get(key, out, ask) : ask(out);
}

Kept<CUcontext> contexts;
Kept<int> priorities;
Kept<std::pair<int, int>> ranges;

}  // namespace

// The entry points and their per-thread twins are generated (codegen,
// `twins`); these are their bodies.
namespace scuda::client::custom {

CUresult cuStreamGetCtx(CUstream stream, CUcontext* ctx, DefaultStream d) {
  return kept_for_stream(contexts, stream, ctx,
                         [&](CUcontext* out) { return forward::cuStreamGetCtx(stream, out, d); });
}

CUresult cuStreamGetPriority(CUstream stream, int* priority, DefaultStream d) {
  return kept_for_stream(priorities, stream, priority,
                         [&](int* out) { return forward::cuStreamGetPriority(stream, out, d); });
}

}  // namespace scuda::client::custom

// The range belongs to the current context's device; without a current
// context the driver's own error comes back.
CUresult scuda::client::custom::cuCtxGetStreamPriorityRange(int* least, int* greatest) {
  CUdevice dev = 0;
  if (::cuCtxGetDevice(&dev) != CUDA_SUCCESS)
    return forward::cuCtxGetStreamPriorityRange(least, greatest);
  std::pair<int, int> range;
  const CUresult rc = ranges.get(static_cast<uint64_t>(dev), &range, [](std::pair<int, int>* out) {
    return forward::cuCtxGetStreamPriorityRange(&out->first, &out->second);
  });
  if (rc != CUDA_SUCCESS) return rc;
  if (least) *least = range.first;
  if (greatest) *greatest = range.second;
  return CUDA_SUCCESS;
}
