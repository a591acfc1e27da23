// The server's content-addressed cache of module and library images, shared
// by every session process through a directory: one file per image, named by
// the hex SHA-256 of its bytes, which the session that stores it has
// computed. Files are written to a temporary name and renamed, so concurrent
// sessions never see a partial file; each ends with a checksum of the image,
// and a file whose image does not match it is a miss and is removed. Recency is the
// file's mtime (touched on every hit); a store evicts the least recently used
// files until the directory holds at most `max_bytes`.
//
// An image a session has found or stored stays *held* by that session: its
// file stays open, so a later eviction by another session cannot take it
// away, and a load that names it by hash alone cannot miss.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "protocol/ops.h"

namespace scuda::server {

struct ModuleCacheOptions {
  std::string dir;  // empty: no cache
  uint64_t max_bytes = uint64_t{2} << 30;
};

class ModuleCache {
 public:
  explicit ModuleCache(ModuleCacheOptions options);
  ~ModuleCache();
  ModuleCache(const ModuleCache&) = delete;
  ModuleCache& operator=(const ModuleCache&) = delete;

  bool enabled() const { return !options_.dir.empty(); }
  // The image named by `hash` and `size`, from this session's held files or
  // the directory; false on a miss. A hit becomes held.
  bool find(const protocol::ImageHash& hash, uint64_t size, std::string* image);
  // Writes `image` (whose hash the caller has checked) to the directory and
  // holds it; false when there is no cache, the image is larger than the
  // bound, or the write fails.
  bool store(const protocol::ImageHash& hash, std::string_view image);
  bool holds(const protocol::ImageHash& hash) const { return held_.count(hash) != 0; }
  // Holds the directory's file for `hash` if it has `size` bytes, without
  // reading it yet (find() checks its bytes); false when it cannot.
  bool keep(const protocol::ImageHash& hash, uint64_t size);

 private:
  std::string path_of(const protocol::ImageHash& hash) const;
  bool read_held(const protocol::ImageHash& hash, uint64_t size, std::string* image);
  void hold(const protocol::ImageHash& hash, int fd);

  ModuleCacheOptions options_;
  std::map<protocol::ImageHash, int> held_;  // open descriptors
};

// Lowercase hex of a hash: the file name of its image.
std::string hash_hex(const protocol::ImageHash& hash);

// `scuda server` sets the options before it forks sessions; the cache itself
// is made in the session process, on its first load.
void set_module_cache_options(ModuleCacheOptions options);
ModuleCache& module_cache();

}  // namespace scuda::server
