// Compiled programs kept between processes for the driver's hidden
// compile-cache table (compile_cache.h): one file per (kind, key) in a
// folder that one user's programs share, named by the SHA-256 of both.
// Each file holds that hash, the blob's size and the blob's SHA-256 before
// the blob, so a torn, foreign or colliding file reads as a miss. A file is
// written whole under a temporary name and renamed into place, so a reader
// never sees half of one; past the size limit the least recently used go.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/lock_order.h"

namespace scuda::client {

class CompileCacheStore {
 public:
  // Files under `dir` (made on the first keep), `limit` bytes in all.
  CompileCacheStore(std::string dir, uint64_t limit);

  // The blob kept for (kind, key), or nullopt; a hit marks it recently used.
  std::optional<std::string> find(uint32_t kind, std::string_view key);
  // Keeps `blob` for (kind, key); false when it cannot be written or is
  // larger than a quarter of the limit.
  bool keep(uint32_t kind, std::string_view key, std::string_view blob);

 private:
  std::string path_of(uint32_t kind, std::string_view key) const;

  const std::string dir_;
  const uint64_t limit_;
  RankedMutex mu_{LockRank::kLeaf, "CompileCacheStore::mu_"};
  std::optional<uint64_t> total_;  // bytes in dir_, counted at the first keep
};

}  // namespace scuda::client
