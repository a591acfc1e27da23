// cuCtxGetLimit: a context's limits change only through cuCtxSetLimit, which
// this client sends, so each answer is kept per context and limit. cuBLAS
// and cuDNN ask for the stack size around many of their calls. A limit no
// set has touched is the device's default, alike in every run: it is kept
// for later runs too (answer_cache.h).
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <utility>

#include "client/contexts/context.h"
#include "client/modules/answer_cache.h"
#include "client/runtime.h"
#include "client/state.h"
#include "common/lock_order.h"
#include "custom.h"
#include "forward.h"

namespace {

using Key = std::pair<uint64_t, CUlimit>;  // (context, limit)

}  // namespace

namespace scuda::client::parts {

struct ContextLimits {
  scuda::RankedMutex mu{scuda::LockRank::kLeaf, "context limits"};
  std::map<Key, size_t> values;
  std::set<Key> set;  // limits cuCtxSetLimit changed
};

}  // namespace scuda::client::parts

namespace {

scuda::client::parts::ContextLimits& kept() {
  return scuda::client::client_state().context_limits.get();
}

// The answer cache's key for the current context's default of `limit`;
// empty when it has no device.
std::string default_key(CUlimit limit) {
  CUdevice dev = 0;
  if (cuCtxGetDevice(&dev) != CUDA_SUCCESS) return {};
  scuda::protocol::Writer w;
  w.put<int32_t>(dev);
  w.put<int32_t>(limit);
  return scuda::client::answers::key('L', w);
}

bool find_kept(const Key& key, size_t* value) {
  std::lock_guard lock(kept().mu);
  auto it = kept().values.find(key);
  if (it == kept().values.end()) return false;
  *value = it->second;
  return true;
}

void keep(const Key& key, size_t value) {
  std::lock_guard lock(kept().mu);
  kept().values[key] = value;
}

bool was_set(const Key& key) {
  std::lock_guard lock(kept().mu);
  return kept().set.count(key) != 0;
}

}  // namespace

void scuda::client::forget_limits(uint64_t ctx_id) {
  std::lock_guard lock(kept().mu);
  std::erase_if(kept().values, [&](const auto& v) { return v.first.first == ctx_id; });
  std::erase_if(kept().set, [&](const Key& k) { return k.first == ctx_id; });
}

CUresult scuda::client::custom::cuCtxGetLimit(size_t* value, CUlimit limit) {
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  const Key key{scuda::client::current_context_id(), limit};
  if (find_kept(key, value)) return CUDA_SUCCESS;
  if (key.first && !was_set(key) && scuda::client::answers::find_value(default_key(limit), value)) {
    keep(key, *value);
    return CUDA_SUCCESS;
  }
  const CUresult rc = scuda::client::forward::cuCtxGetLimit(value, limit);
  if (rc != CUDA_SUCCESS || !key.first) return rc;
  keep(key, *value);
  if (!was_set(key)) scuda::client::answers::remember_value(default_key(limit), *value);
  return rc;
}

// The driver may round what it is given, so the value is asked again.
CUresult scuda::client::custom::cuCtxSetLimit(CUlimit limit, size_t value) {
  {
    std::lock_guard lock(kept().mu);
    const Key key{scuda::client::current_context_id(), limit};
    kept().values.erase(key);
    kept().set.insert(key);
  }
  return scuda::client::forward::cuCtxSetLimit(limit, value);
}
