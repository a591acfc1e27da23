#include "server/module_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <vector>

#include <spdlog/spdlog.h>

namespace scuda::server {

namespace {

// A session keeps at most this many images open; beyond it, images are still
// cached but not held, so the client keeps sending them.
constexpr size_t kMaxHeld = 512;
// Temporary files older than this were left by a session that died mid-write.
constexpr time_t kStaleTempSeconds = 3600;
constexpr const char* kTempPrefix = ".tmp-";

bool read_exactly(int fd, size_t size, std::string* out) {
  out->resize(size);
  size_t done = 0;
  while (done < size) {
    ssize_t n = pread(fd, out->data() + done, size - done, static_cast<off_t>(done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

enum class FileCheck { kGood, kWrongSize, kCorrupt };

// Reads the regular file open on `fd`, which must hold `size` bytes that hash
// to `hash`. A wrong size is not proof of corruption: the client may have
// named the size wrong.
FileCheck read_verified(int fd, const protocol::ImageHash& hash, uint64_t size,
                        std::string* image) {
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return FileCheck::kCorrupt;
  if (static_cast<uint64_t>(st.st_size) != size) return FileCheck::kWrongSize;
  if (!read_exactly(fd, size, image)) return FileCheck::kCorrupt;
  return protocol::image_hash(image->data(), image->size()) == hash ? FileCheck::kGood
                                                                    : FileCheck::kCorrupt;
}

bool is_image_name(const std::string& name) {
  return name.size() == 64 && name.find_first_not_of("0123456789abcdef") == std::string::npos;
}

struct Entry {
  timespec mtime;
  uint64_t size;
  std::string path;
};

bool older(const Entry& a, const Entry& b) {
  if (a.mtime.tv_sec != b.mtime.tv_sec) return a.mtime.tv_sec < b.mtime.tv_sec;
  return a.mtime.tv_nsec < b.mtime.tv_nsec;
}

// The directory's images, oldest first; removes stale temporary files.
std::vector<Entry> list_images(const std::string& dir, uint64_t* total) {
  std::vector<Entry> entries;
  *total = 0;
  DIR* d = opendir(dir.c_str());
  if (!d) return entries;
  const time_t now = time(nullptr);
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    const std::string path = dir + "/" + name;
    struct stat st;
    if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (name.rfind(kTempPrefix, 0) == 0 && now - st.st_mtime > kStaleTempSeconds)
      unlink(path.c_str());
    if (!is_image_name(name)) continue;
    entries.push_back({st.st_mtim, static_cast<uint64_t>(st.st_size), path});
    *total += static_cast<uint64_t>(st.st_size);
  }
  closedir(d);
  std::sort(entries.begin(), entries.end(), older);
  return entries;
}

ModuleCacheOptions& configured() {
  static ModuleCacheOptions options;
  return options;
}

}  // namespace

std::string hash_hex(const protocol::ImageHash& hash) {
  static const char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (uint8_t b : hash) {
    hex.push_back(kDigits[b >> 4]);
    hex.push_back(kDigits[b & 15]);
  }
  return hex;
}

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

// Makes the directory and its missing parents, private to the server's user.
bool ModuleCache::make_dir() {
  const std::string& dir = options_.dir;
  for (size_t slash = dir.find('/', 1); slash != std::string::npos;
       slash = dir.find('/', slash + 1))
    mkdir(dir.substr(0, slash).c_str(), 0700);
  mkdir(dir.c_str(), 0700);
  struct stat st;
  return stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool ModuleCache::store(const protocol::ImageHash& hash, std::string_view image) {
  if (!enabled() || image.size() > options_.max_bytes || !make_dir()) return false;
  const std::string path = path_of(hash);
  const std::string temp =
      options_.dir + "/" + kTempPrefix + hash_hex(hash) + "-" + std::to_string(getpid());
  unlink(temp.c_str());
  int fd = open(temp.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    spdlog::warn("module cache: cannot write {}: {}", temp, std::strerror(errno));
    return false;
  }
  if (!write_all(fd, image) || rename(temp.c_str(), path.c_str()) != 0) {
    spdlog::warn("module cache: cannot store {}: {}", path, std::strerror(errno));
    unlink(temp.c_str());
    close(fd);
    return false;
  }
  evict(path);
  hold(hash, fd);
  return true;
}

void ModuleCache::evict(const std::string& keep) {
  uint64_t total = 0;
  for (const Entry& e : list_images(options_.dir, &total)) {
    if (total <= options_.max_bytes) break;
    if (e.path == keep) continue;
    if (unlink(e.path.c_str()) == 0 || errno == ENOENT) total -= e.size;
  }
}

void set_module_cache_options(ModuleCacheOptions options) { configured() = std::move(options); }

ModuleCache& module_cache() {
  static ModuleCache* cache = new ModuleCache(configured());  // lives until exit
  return *cache;
}

}  // namespace scuda::server
