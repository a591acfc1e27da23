#include "server/module_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "common/cache_files.h"

namespace scuda::server {

namespace {

// A session keeps at most this many images open; beyond it, images are still
// cached but not held, so the client keeps sending them.
constexpr size_t kMaxHeld = 512;

enum class FileCheck { kGood, kWrongSize, kCorrupt };

// Reads the regular file open on `fd`, which must hold `size` bytes that hash
// to `hash`. A wrong size is not proof of corruption: the client may have
// named the size wrong.
FileCheck read_verified(int fd, const protocol::ImageHash& hash, uint64_t size,
                        std::string* image) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return FileCheck::kCorrupt;
  if (static_cast<uint64_t>(st.st_size) != size) return FileCheck::kWrongSize;
  image->resize(size);
  if (!pread_exactly(fd, image->data(), size, 0)) return FileCheck::kCorrupt;
  return protocol::image_hash(image->data(), image->size()) == hash ? FileCheck::kGood
                                                                    : FileCheck::kCorrupt;
}

ModuleCacheOptions& configured() {
  static ModuleCacheOptions options;
  return options;
}

}  // namespace

std::string hash_hex(const protocol::ImageHash& hash) { return to_hex(hash); }

ModuleCache::ModuleCache(ModuleCacheOptions options) : options_(std::move(options)) {}

ModuleCache::~ModuleCache() {
  for (auto& [hash, fd] : held_) close(fd);
}

std::string ModuleCache::path_of(const protocol::ImageHash& hash) const {
  return options_.dir + "/" + hash_hex(hash);
}

bool ModuleCache::find(const protocol::ImageHash& hash, uint64_t size, std::string* image) {
  if (held_.count(hash)) return read_held(hash, size, image);
  if (!enabled()) return false;
  const std::string path = path_of(hash);
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  const FileCheck check = read_verified(fd, hash, size, image);
  if (check != FileCheck::kGood) {
    if (check == FileCheck::kCorrupt) {
      spdlog::warn("module cache: {} is corrupt; removed", path);
      unlink(path.c_str());
    }
    close(fd);
    return false;
  }
  futimens(fd, nullptr);  // most recently used
  hold(hash, fd);
  return true;
}

bool ModuleCache::keep(const protocol::ImageHash& hash, uint64_t size) {
  if (held_.count(hash) || !enabled()) return holds(hash);
  const int fd = open(path_of(hash).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) != size) {
    close(fd);
    return false;
  }
  futimens(fd, nullptr);
  hold(hash, fd);
  return holds(hash);
}

bool ModuleCache::read_held(const protocol::ImageHash& hash, uint64_t size, std::string* image) {
  const int fd = held_.at(hash);
  if (read_verified(fd, hash, size, image) != FileCheck::kGood) return false;
  futimens(fd, nullptr);
  return true;
}

void ModuleCache::hold(const protocol::ImageHash& hash, int fd) {
  if (held_.size() >= kMaxHeld || !held_.emplace(hash, fd).second) close(fd);
}

bool ModuleCache::store(const protocol::ImageHash& hash, std::string_view image) {
  if (!enabled() || image.size() > options_.max_bytes || !make_private_dir(options_.dir))
    return false;
  const int fd = publish_file(options_.dir, hash_hex(hash), {image});
  if (fd < 0) {
    spdlog::warn("module cache: cannot store {}: {}", path_of(hash), std::strerror(errno));
    return false;
  }
  trim_least_recent(options_.dir, options_.max_bytes, options_.max_bytes, path_of(hash));
  hold(hash, fd);
  return true;
}

void set_module_cache_options(ModuleCacheOptions options) { configured() = std::move(options); }

ModuleCache& module_cache() {
  static ModuleCache* cache = new ModuleCache(configured());  // lives until exit
  return *cache;
}

}  // namespace scuda::server
