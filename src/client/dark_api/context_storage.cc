#include "client/dark_api/context_storage.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/runtime.h"
#include "client/state.h"

namespace scuda::client {
namespace {

struct Entry {
  void* value;
  ContextStorageDestructor destructor;
};

using Key = std::pair<uintptr_t, uintptr_t>;  // (context, key)

}  // namespace

namespace parts {

struct ContextStorage {
  std::shared_mutex mutex;
  std::map<Key, Entry> entries;
};

}  // namespace parts

namespace {

using parts::ContextStorage;

// Callers run during static initialisation too (a statically linked cudart
// in another library), which ClientState's lifetime is made for.
ContextStorage& store() { return client_state().context_storage.get(); }

Key make_key(CUcontext ctx, void* key) {
  return {reinterpret_cast<uintptr_t>(ctx), reinterpret_cast<uintptr_t>(key)};
}

// NULL means the calling thread's current context (ZLUDA, LUPINE); LUPINE
// also takes (CUcontext)-1 to mean the same (its PR #430).
CUresult resolve_context(CUcontext* ctx) {
  if (*ctx != nullptr && *ctx != reinterpret_cast<CUcontext>(~uintptr_t{0})) {
    return CUDA_SUCCESS;
  }
  CUcontext current = nullptr;
  const CUresult rc = cuCtxGetCurrent(&current);
  if (rc != CUDA_SUCCESS) return rc;
  if (current == nullptr) {
    spdlog::debug("context-local storage used with no current context");
    return CUDA_ERROR_INVALID_CONTEXT;
  }
  *ctx = current;
  return CUDA_SUCCESS;
}

}  // namespace

CUresult CUDAAPI context_storage_put(CUcontext ctx, void* key, void* value,
                                     ContextStorageDestructor destructor) {
  if (exiting()) return CUDA_ERROR_DEINITIALIZED;
  spdlog::trace("context-local storage put ({}, {})", static_cast<void*>(ctx), key);
  if (const CUresult rc = resolve_context(&ctx); rc != CUDA_SUCCESS) return rc;
  ContextStorage& s = store();
  std::unique_lock lock(s.mutex);
  s.entries[make_key(ctx, key)] = Entry{value, destructor};
  return CUDA_SUCCESS;
}

// Does not run the destructor: callers free the value themselves after an
// explicit delete (LUPINE, SveSop's relay; docs/export-tables.md).
CUresult CUDAAPI context_storage_delete(CUcontext ctx, void* key) {
  if (exiting()) return CUDA_ERROR_DEINITIALIZED;
  spdlog::trace("context-local storage delete ({}, {})", static_cast<void*>(ctx), key);
  if (const CUresult rc = resolve_context(&ctx); rc != CUDA_SUCCESS) return rc;
  ContextStorage& s = store();
  std::unique_lock lock(s.mutex);
  return s.entries.erase(make_key(ctx, key)) != 0 ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI context_storage_get(void** value, CUcontext ctx, void* key) {
  if (exiting()) return CUDA_ERROR_DEINITIALIZED;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (const CUresult rc = resolve_context(&ctx); rc != CUDA_SUCCESS) return rc;
  ContextStorage& s = store();
  std::shared_lock lock(s.mutex);
  const auto it = s.entries.find(make_key(ctx, key));
  spdlog::trace("context-local storage get ({}, {}): {}", static_cast<void*>(ctx), key,
                it == s.entries.end() ? "absent" : "found");
  if (it == s.entries.end()) return CUDA_ERROR_INVALID_HANDLE;
  *value = it->second.value;
  return CUDA_SUCCESS;
}

void run_context_storage_destructors(CUcontext ctx) {
  struct Pending {
    void* key;
    Entry entry;
  };
  std::vector<Pending> pending;
  {
    ContextStorage& s = store();
    std::unique_lock lock(s.mutex);
    const uintptr_t c = reinterpret_cast<uintptr_t>(ctx);
    auto first = s.entries.lower_bound({c, 0});
    auto last = first;
    for (; last != s.entries.end() && last->first.first == c; ++last) {
      pending.push_back({reinterpret_cast<void*>(last->first.second), last->second});
    }
    s.entries.erase(first, last);
  }
  // Outside the lock: a destructor may call back into the storage.
  for (const Pending& p : pending) {
    if (p.entry.destructor != nullptr) p.entry.destructor(ctx, p.key, p.entry.value);
  }
}

}  // namespace scuda::client
