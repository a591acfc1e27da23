#include "server/kernels/module_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include <spdlog/spdlog.h>

#include "common/cache_files.h"
#include "common/checksum.h"

namespace scuda::server {

namespace {

// A session keeps at most this many images open; beyond it, images are still
// cached but not held, so the client keeps sending them.
constexpr size_t kMaxHeld = 512;

// Each file is its image, then a trailer: this magic and the image's
// checksum. Only a session that has hashed an image itself stores it, so a
// reader checks the trailer (a damaged file) and not the SHA-256 again,
// which would cost a session start tens of milliseconds for cuBLAS alone.
// Files of another layout (an image alone) have the wrong size, and miss.
constexpr std::string_view kTrailerMagic = "scudaC1\n";
constexpr uint64_t kTrailerBytes = kTrailerMagic.size() + sizeof(Checksum);

std::string trailer_of(std::string_view image) {
  const Checksum sum = checksum(image.data(), image.size());
  return std::string(kTrailerMagic).append(sum.begin(), sum.end());
}

enum class FileCheck { kGood, kWrongSize, kCorrupt };

// The regular file open on `fd` holds `size` bytes of image and its trailer.
// A wrong size is not proof of corruption: the client may have named the
// size wrong.
FileCheck check_size(int fd, uint64_t size) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return FileCheck::kCorrupt;
  // A size from the network so large that the trailer's would wrap around.
  if (size > std::numeric_limits<uint64_t>::max() - kTrailerBytes) return FileCheck::kWrongSize;
  return static_cast<uint64_t>(st.st_size) == size + kTrailerBytes ? FileCheck::kGood
                                                                   : FileCheck::kWrongSize;
}

// Reads the image of `size` bytes from the file open on `fd`, checked
// against its trailer.
FileCheck read_checked(int fd, uint64_t size, std::string* image) {
  if (const FileCheck check = check_size(fd, size); check != FileCheck::kGood) return check;
  image->resize(size + kTrailerBytes);
  if (!pread_exactly(fd, image->data(), image->size(), 0)) return FileCheck::kCorrupt;
  const bool intact =
      std::string_view(*image).substr(size) == trailer_of(std::string_view(*image).substr(0, size));
  image->resize(size);
  return intact ? FileCheck::kGood : FileCheck::kCorrupt;
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
  const FileCheck check = read_checked(fd, size, image);
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
  if (check_size(fd, size) != FileCheck::kGood) {
    close(fd);
    return false;
  }
  futimens(fd, nullptr);
  hold(hash, fd);
  return holds(hash);
}

bool ModuleCache::read_held(const protocol::ImageHash& hash, uint64_t size, std::string* image) {
  const int fd = held_.at(hash);
  if (read_checked(fd, size, image) != FileCheck::kGood) return false;
  futimens(fd, nullptr);
  return true;
}

void ModuleCache::hold(const protocol::ImageHash& hash, int fd) {
  if (held_.size() >= kMaxHeld || !held_.emplace(hash, fd).second) close(fd);
}

bool ModuleCache::store(const protocol::ImageHash& hash, std::string_view image) {
  if (!enabled() || image.size() + kTrailerBytes > options_.max_bytes ||
      !make_private_dir(options_.dir))
    return false;
  const int fd = publish_file(options_.dir, hash_hex(hash), {image, trailer_of(image)});
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
