#include "common/cache_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <ctime>
#include <vector>

#include <fmt/format.h>

namespace scuda {

namespace {

constexpr std::string_view kTempPrefix = ".tmp-";
// A temporary file this old was left by a writer that died mid-write.
constexpr time_t kStaleTempSeconds = 3600;

// A name no other writer, in this process or another, uses at once.
std::string temporary_name() {
  static std::atomic<uint64_t> next{0};
  return fmt::format("{}{}-{}", kTempPrefix, ::getpid(), next.fetch_add(1));
}

struct Entry {
  timespec used;
  uint64_t size;
  std::string path;
};

bool used_earlier(const Entry& a, const Entry& b) {
  if (a.used.tv_sec != b.used.tv_sec) return a.used.tv_sec < b.used.tv_sec;
  return a.used.tv_nsec < b.used.tv_nsec;
}

// The folder's entries; removes stale temporary files on the way.
std::vector<Entry> list_entries(const std::string& dir) {
  std::vector<Entry> entries;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return entries;
  const time_t now = ::time(nullptr);
  while (const dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    const std::string path = dir + "/" + std::string(name);
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    if (name.starts_with(kTempPrefix) && now - st.st_mtime > kStaleTempSeconds)
      ::unlink(path.c_str());
    if (is_entry_name(name))
      entries.push_back({st.st_mtim, static_cast<uint64_t>(st.st_size), path});
  }
  ::closedir(d);
  return entries;
}

}  // namespace

bool read_exactly(int fd, void* to, size_t size) {
  auto* p = static_cast<char*>(to);
  while (size > 0) {
    const ssize_t n = ::read(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool pread_exactly(int fd, void* to, size_t size, off_t at) {
  auto* p = static_cast<char*>(to);
  while (size > 0) {
    const ssize_t n = ::pread(fd, p, size, at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    at += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool write_exactly(int fd, const void* from, size_t size) {
  const auto* p = static_cast<const char*>(from);
  while (size > 0) {
    const ssize_t n = ::write(fd, p, size);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) errno = EIO;  // a write that moves nothing sets no errno
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

std::string to_hex(std::span<const uint8_t> bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(bytes.size() * 2);
  for (uint8_t b : bytes) {
    hex.push_back(kDigits[b >> 4]);
    hex.push_back(kDigits[b & 15]);
  }
  return hex;
}

bool is_entry_name(std::string_view name) {
  return name.size() == 64 && name.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

bool make_private_dir(const std::string& dir) {
  for (size_t slash = dir.find('/', 1); slash != std::string::npos;
       slash = dir.find('/', slash + 1))
    ::mkdir(dir.substr(0, slash).c_str(), 0700);
  ::mkdir(dir.c_str(), 0700);
  struct stat st {};
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

int publish_file(const std::string& dir, const std::string& name,
                 std::initializer_list<std::string_view> pieces) {
  const std::string temporary = dir + "/" + temporary_name();
  const int fd =
      ::open(temporary.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  bool ok = true;
  for (std::string_view piece : pieces) ok = ok && write_exactly(fd, piece.data(), piece.size());
  if (ok && ::rename(temporary.c_str(), (dir + "/" + name).c_str()) == 0) return fd;
  const int error = errno;
  ::unlink(temporary.c_str());
  ::close(fd);
  errno = error;
  return -1;
}

uint64_t trim_least_recent(const std::string& dir, uint64_t limit, uint64_t target,
                           const std::string& keep) {
  std::vector<Entry> entries = list_entries(dir);
  uint64_t total = 0;
  for (const Entry& e : entries) total += e.size;
  if (total <= limit) return total;
  std::sort(entries.begin(), entries.end(), used_earlier);
  for (const Entry& e : entries) {
    if (total <= target) break;
    if (e.path == keep) continue;
    if (::unlink(e.path.c_str()) == 0 || errno == ENOENT) total -= e.size;
  }
  return total;
}

}  // namespace scuda
