// cuCtxGetLimit: a context's limits change only through cuCtxSetLimit, which
// this client sends, so each answer is kept per context and limit. cuBLAS
// and cuDNN ask for the stack size around many of their calls.
#include <map>
#include <mutex>
#include <utility>

#include "client/context.h"
#include "client/runtime.h"
#include "forward.h"

namespace {

struct Kept {
  std::mutex mu;
  std::map<std::pair<uint64_t, CUlimit>, size_t> values;  // (context, limit)
};

Kept& kept() {
  static Kept* k = new Kept;  // never freed: used until exit
  return *k;
}

}  // namespace

void scuda::client::forget_limits(uint64_t ctx_id) {
  std::lock_guard lock(kept().mu);
  std::erase_if(kept().values, [&](const auto& v) { return v.first.first == ctx_id; });
}

extern "C" {

CUresult CUDAAPI cuCtxGetLimit(size_t* value, CUlimit limit) {
  SCUDA_PASSTHROUGH(cuCtxGetLimit, value, limit);
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  const std::pair key{scuda::client::current_context_id(), limit};
  {
    std::lock_guard lock(kept().mu);
    if (auto it = kept().values.find(key); it != kept().values.end()) {
      *value = it->second;
      return CUDA_SUCCESS;
    }
  }
  const CUresult rc = scuda::client::forward::cuCtxGetLimit(value, limit);
  if (rc == CUDA_SUCCESS && key.first) {
    std::lock_guard lock(kept().mu);
    kept().values[key] = *value;
  }
  return rc;
}

// The driver may round what it is given, so the value is asked again.
CUresult CUDAAPI cuCtxSetLimit(CUlimit limit, size_t value) {
  SCUDA_PASSTHROUGH(cuCtxSetLimit, limit, value);
  {
    std::lock_guard lock(kept().mu);
    kept().values.erase({scuda::client::current_context_id(), limit});
  }
  return scuda::client::forward::cuCtxSetLimit(limit, value);
}

}  // extern "C"
