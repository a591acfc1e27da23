#include "client/dark_api/compile_cache_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "protocol/ops.h"

namespace scuda::client {

namespace {

namespace fs = std::filesystem;

constexpr char kMagic[8] = {'s', 'c', 'u', 'd', 'a', 'c', 'c', '1'};

// What precedes the blob in a file.
struct Header {
  char magic[8];
  protocol::ImageHash key_hash;  // of kind and key
  uint64_t size;
  protocol::ImageHash blob_hash;
};
static_assert(sizeof(Header) == 80);

protocol::ImageHash key_hash(uint32_t kind, std::string_view key) {
  std::string bytes(sizeof kind, '\0');
  std::memcpy(bytes.data(), &kind, sizeof kind);
  bytes.append(key);
  return protocol::image_hash(bytes.data(), bytes.size());
}

std::string hex(const protocol::ImageHash& hash) {
  std::string s;
  for (uint8_t b : hash) s += fmt::format("{:02x}", b);
  return s;
}

bool read_exactly(int fd, void* to, size_t size) {
  auto* p = static_cast<char*>(to);
  while (size > 0) {
    const ssize_t n = ::read(fd, p, size);
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool write_exactly(int fd, const void* from, size_t size) {
  const auto* p = static_cast<const char*>(from);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

// A name no other writer, in this process or another, uses at once.
std::string temporary_name() {
  static std::atomic<uint64_t> next{0};
  return fmt::format(".tmp-{}-{}", ::getpid(), next.fetch_add(1));
}

// The blob of the file open at `fd` when it is a whole entry for `key_hash`
// of at most `limit` bytes.
std::optional<std::string> read_entry(int fd, const protocol::ImageHash& key_hash, uint64_t limit) {
  struct stat st {};
  Header h{};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || !read_exactly(fd, &h, sizeof h))
    return std::nullopt;
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0 || h.key_hash != key_hash ||
      h.size > limit || h.size != static_cast<uint64_t>(st.st_size) - sizeof h)
    return std::nullopt;
  std::string blob(h.size, '\0');
  if (!read_exactly(fd, blob.data(), blob.size()) ||
      h.blob_hash != protocol::image_hash(blob.data(), blob.size()))
    return std::nullopt;
  return blob;
}

}  // namespace

CompileCacheStore::CompileCacheStore(std::string dir, uint64_t limit)
    : dir_(std::move(dir)), limit_(limit) {}

std::string CompileCacheStore::path_of(uint32_t kind, std::string_view key) const {
  return dir_ + "/" + hex(key_hash(kind, key));
}

std::optional<std::string> CompileCacheStore::find(uint32_t kind, std::string_view key) {
  const std::string path = path_of(kind, key);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return std::nullopt;
  std::optional<std::string> blob = read_entry(fd, key_hash(kind, key), limit_);
  if (blob) ::futimens(fd, nullptr);  // recently used: trimmed last
  ::close(fd);
  if (!blob) spdlog::debug("compile cache: {} is not a whole entry; treated as a miss", path);
  return blob;
}

bool CompileCacheStore::keep(uint32_t kind, std::string_view key, std::string_view blob) {
  if (blob.size() > limit_ / 4) return false;
  // The programs are the user's own: the folder is theirs alone.
  std::error_code ec;
  fs::create_directories(fs::path(dir_).parent_path(), ec);
  if (::mkdir(dir_.c_str(), 0700) != 0 && errno != EEXIST) {
    spdlog::debug("compile cache: cannot make {}: {}", dir_, std::strerror(errno));
    return false;
  }
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.key_hash = key_hash(kind, key);
  h.size = blob.size();
  h.blob_hash = protocol::image_hash(blob.data(), blob.size());
  const std::string temporary = dir_ + "/" + temporary_name();
  const int fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  const bool written =
      write_exactly(fd, &h, sizeof h) && write_exactly(fd, blob.data(), blob.size());
  const bool closed = ::close(fd) == 0;
  if (!written || !closed || ::rename(temporary.c_str(), path_of(kind, key).c_str()) != 0) {
    ::unlink(temporary.c_str());
    return false;
  }
  std::lock_guard lock(mu_);
  if (total_) *total_ += sizeof h + blob.size();
  if (!total_ || *total_ > limit_) trim();
  return true;
}

void CompileCacheStore::trim() {
  std::vector<std::tuple<fs::file_time_type, uint64_t, fs::path>> files;
  uint64_t total = 0;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) {
    std::error_code e1, e2;
    const uint64_t size = e.is_regular_file(e1) ? e.file_size(e1) : 0;
    const fs::file_time_type used = e.last_write_time(e2);
    if (e1 || e2) continue;
    files.emplace_back(used, size, e.path());
    total += size;
  }
  if (total > limit_) {
    std::sort(files.begin(), files.end());
    for (const auto& [used, size, path] : files) {
      if (total <= limit_ / 4 * 3) break;
      if (fs::remove(path, ec)) total -= size;
    }
  }
  total_ = total;
}

}  // namespace scuda::client
