// cuGetProcAddress: how cudart and libraries find every other entry point.
// The generated table maps (name, CUDA version, per-thread?) to our symbols.
#include <cstring>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <spdlog/spdlog.h>

#include "client/runtime.h"
#include "proc_table.h"

namespace scuda::client {

namespace {

// The entries named each name, found by hashing: libraries ask for hundreds
// of names at start, and some ask again before calls. The table is sorted
// by name, so each name's entries are one run of it.
using Run = std::pair<const ProcEntry*, const ProcEntry*>;

const std::unordered_map<std::string_view, Run>& runs_by_name() {
  static const auto* runs = [] {
    auto* m = new std::unordered_map<std::string_view, Run>;  // never freed: used until exit
    for (size_t i = 0; i < kProcTableSize; ++i) {
      auto [it, fresh] = m->try_emplace(kProcTable[i].name, &kProcTable[i], &kProcTable[i] + 1);
      if (!fresh) it->second.second = &kProcTable[i] + 1;
    }
    return m;
  }();
  return *runs;
}

Run entries_named(const char* name) {
  const auto& runs = runs_by_name();
  auto it = runs.find(name);
  return it == runs.end() ? Run{nullptr, nullptr} : it->second;
}

// Picks the newest variant of `name` introduced at or before `version`,
// preferring the per-thread-default-stream variant when asked for.
CUresult lookup(const char* name, int version, bool per_thread, void** pfn,
                CUdriverProcAddressQueryResult* status) {
  const ProcEntry* best = nullptr;
  const auto [first, last] = entries_named(name);
  const bool any = first != last;
  for (const ProcEntry* e = first; e != last; ++e) {
    if (e->version > version) continue;
    if (!best || e->version > best->version ||
        (e->version == best->version && e->per_thread == per_thread))
      best = e;
  }
  if (status)
    *status = best  ? CU_GET_PROC_ADDRESS_SUCCESS
              : any ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                    : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  *pfn = best ? best->fn : nullptr;
  return best ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

}  // namespace

}  // namespace scuda::client

extern "C" {

CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult* status) {
  if (scuda::client::exiting()) return CUDA_ERROR_DEINITIALIZED;
  CUresult rc;
  // Traced pass-through hands out scuda's own entry points (which forward to
  // the local driver) so that every call shows in the trace.
  if (scuda::client::passthrough() && !spdlog::should_log(spdlog::level::trace)) {
    auto real = scuda::client::local_driver().cuGetProcAddress_v2;
    rc = real ? real(symbol, pfn, version, flags, status) : CUDA_ERROR_NOT_SUPPORTED;
  } else if (!symbol || !pfn) {
    return CUDA_ERROR_INVALID_VALUE;
  } else {
    const bool per_thread = flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
    rc = scuda::client::lookup(symbol, version, per_thread, pfn, status);
  }
  if (scuda::client::g_watch_entries.load(std::memory_order_relaxed))
    spdlog::trace("cuGetProcAddress({}, {}, {}) = {}", symbol ? symbol : "(null)", version, flags,
                  static_cast<int>(rc));
  return rc;
}

}  // extern "C"
