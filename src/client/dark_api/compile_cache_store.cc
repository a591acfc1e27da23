#include "client/dark_api/compile_cache_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "common/cache_files.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

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
  return dir_ + "/" + to_hex(key_hash(kind, key));
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
  if (!make_private_dir(dir_)) {
    spdlog::debug("compile cache: cannot make {}: {}", dir_, std::strerror(errno));
    return false;
  }
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.key_hash = key_hash(kind, key);
  h.size = blob.size();
  h.blob_hash = protocol::image_hash(blob.data(), blob.size());
  const int fd =
      publish_file(dir_, to_hex(h.key_hash),
                   {std::string_view(reinterpret_cast<const char*>(&h), sizeof h), blob});
  if (fd < 0) return false;
  ::close(fd);
  std::lock_guard lock(mu_);
  if (total_) *total_ += sizeof h + blob.size();
  // Down to three quarters, so that the next keeps do not trim again at once.
  if (!total_ || *total_ > limit_) total_ = trim_least_recent(dir_, limit_, limit_ / 4 * 3);
  return true;
}

}  // namespace scuda::client
