#include "client/dark_api/compile_cache.h"

#include <cuda.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include <spdlog/spdlog.h>

#include "client/cache_dir.h"
#include "client/dark_api/compile_cache_store.h"
#include "client/dark_api/export_table_slots.h"
#include "client/dark_api/export_tables.h"
#include "client/state.h"
#include "client/stats.h"

namespace scuda::client {
namespace {

using export_slots::fn;
using export_slots::Table;

// The driver's default size for its own cache.
constexpr uint64_t kDefaultLimit = uint64_t{256} << 20;
constexpr uint64_t kMaxLimit = uint64_t{4} << 30;
// A key is a program's bitcode; larger ones are refused, not hashed.
constexpr uint32_t kMaxKey = 64u << 20;

// One lookup or store: what slot 1 opened.
struct Entry {
  uint32_t kind;
  std::string key;
};

uint64_t limit_from_environment() {
  const char* v = std::getenv("CUDA_CACHE_MAXSIZE");
  if (v == nullptr || *v == '\0') return kDefaultLimit;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (*end != '\0') {
    spdlog::warn("CUDA_CACHE_MAXSIZE={} is not a number of bytes; the compile cache keeps {}", v,
                 kDefaultLimit);
    return kDefaultLimit;
  }
  return std::min<uint64_t>(n, kMaxLimit);
}

}  // namespace

namespace parts {

// The compile cache's store, or none: CUDA_CACHE_DISABLE=1, a zero limit, or
// no cache folder.
struct CompileCache {
  CompileCache() {
    const char* off = std::getenv("CUDA_CACHE_DISABLE");
    const uint64_t limit = limit_from_environment();
    const std::string dir = cache_dir();
    if ((off && std::strcmp(off, "1") == 0) || limit == 0 || dir.empty()) return;
    store = std::make_unique<CompileCacheStore>(dir + "/compiled", limit);
  }
  std::unique_ptr<CompileCacheStore> store;
};

}  // namespace parts

namespace {

// nullptr when nothing is kept.
CompileCacheStore* store() { return client_state().compile_cache.get().store.get(); }

// The slots take and hand out an entry as the opaque pointer the caller
// keeps, and are called through those types.
Entry* entry_of(void* opaque) { return static_cast<Entry*>(opaque); }

// Slot 1: (&entry, kind, key, key's size) opens an entry.
CUresult CUDAAPI open_entry(void** out, uint32_t kind, const void* key, uint32_t size) {
  if (exiting()) return CUDA_ERROR_DEINITIALIZED;
  if (out == nullptr || (key == nullptr && size > 0) || size > kMaxKey)
    return CUDA_ERROR_INVALID_VALUE;
  *out = new Entry{kind, std::string(static_cast<const char*>(key), size)};
  return CUDA_SUCCESS;
}

// Slot 2: (entry) closes it.
CUresult CUDAAPI close_entry(void* entry) {
  if (entry == nullptr) return CUDA_ERROR_INVALID_VALUE;
  delete entry_of(entry);
  return CUDA_SUCCESS;
}

// Slot 3: (entry, 0, &data, &size) hands out a copy of the kept blob, which
// the caller gives back through slot 6; CUDA_ERROR_NOT_FOUND on a miss.
CUresult CUDAAPI find_entry(void* opaque, uint64_t, void** data, uint32_t* size) {
  if (exiting()) return CUDA_ERROR_DEINITIALIZED;
  const Entry* entry = entry_of(opaque);
  if (entry == nullptr || data == nullptr || size == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::optional<std::string> blob = store() ? store()->find(entry->kind, entry->key) : std::nullopt;
  stats::count_call(blob ? "compile cache: hit" : "compile cache: miss");
  if (!blob) return CUDA_ERROR_NOT_FOUND;
  void* copy = std::malloc(blob->size() ? blob->size() : 1);
  if (copy == nullptr) return CUDA_ERROR_OUT_OF_MEMORY;
  std::copy(blob->begin(), blob->end(), static_cast<char*>(copy));
  *data = copy;
  *size = static_cast<uint32_t>(blob->size());
  return CUDA_SUCCESS;
}

// Slot 4: (entry, 0, data, size) keeps a blob. A blob not kept is not an
// error: the caller compiles it again next time.
CUresult CUDAAPI keep_entry(void* opaque, uint64_t, const void* data, uint32_t size) {
  if (exiting()) return CUDA_ERROR_DEINITIALIZED;
  const Entry* entry = entry_of(opaque);
  if (entry == nullptr || (data == nullptr && size > 0)) return CUDA_ERROR_INVALID_VALUE;
  if (store() && store()->keep(entry->kind, entry->key,
                               std::string_view(static_cast<const char*>(data), size)))
    stats::count_call("compile cache: kept");
  return CUDA_SUCCESS;
}

// Slot 6: (data, ...) gives back what slot 3 handed out.
CUresult CUDAAPI release_blob(void* data) {
  std::free(data);
  return CUDA_SUCCESS;
}

const Table<kCompileCacheWords>& words() {
  static const Table<kCompileCacheWords> t = [] {
    auto w = export_slots::unknown_slots<0xda9151d3, kCompileCacheWords>(
        std::make_index_sequence<kCompileCacheWords>());
    w[1] = fn(&open_entry);
    w[2] = fn(&close_entry);
    w[3] = fn(&find_entry);
    w[4] = fn(&keep_entry);
    w[6] = fn(&release_blob);
    return w;
  }();
  return t;
}

}  // namespace

const void* compile_cache_table() { return words().data(); }

}  // namespace scuda::client
