#include "client/answer_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "client/session.h"
#include "protocol/frame.h"
#include "protocol/handshake.h"
#include "protocol/ops.h"

namespace scuda::client::answers {

namespace {

constexpr std::string_view kMagic = "scuda answers 1\n";
// A file this big is read no further and grows no more.
constexpr size_t kMaxFileBytes = size_t{64} << 20;
constexpr uint32_t kMaxPart = 1 << 20;  // a key's or a value's bytes

std::string cache_dir() {
  if (const char* dir = std::getenv("SCUDA_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/scuda";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/scuda";
  return {};
}

bool turned_off() {
  const char* flag = std::getenv("SCUDA_ANSWER_CACHE");
  return flag && (std::strcmp(flag, "off") == 0 || std::strcmp(flag, "0") == 0);
}

// The server, as the name of its file: what it said of its driver and
// devices, and the protocol spoken.
std::string file_name() {
  protocol::Welcome w = snapshot();
  w.session_pid = 0;
  protocol::Writer out;
  out.u32(protocol::kProtocolVersion);
  encode(w, out);
  const protocol::ImageHash hash = protocol::image_hash(out.data().data(), out.size());
  std::string name = "answers-";
  for (int i = 0; i < 8; ++i) name += fmt::format("{:02x}", hash[i]);
  return name;
}

std::string record(std::string_view key, std::string_view value) {
  std::string r(8, '\0');
  const uint32_t sizes[2] = {static_cast<uint32_t>(key.size()),
                             static_cast<uint32_t>(value.size())};
  std::memcpy(r.data(), sizes, sizeof sizes);
  return r.append(key).append(value);
}

bool write_all(int fd, std::string_view bytes) {
  return ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
}

class Store {
 public:
  Store() {
    if (!turned_off()) open();
  }

  bool find(std::string_view key, std::string* value) {
    std::lock_guard lock(mu_);
    auto it = values_.find(std::string(key));
    if (it == values_.end()) return false;
    *value = it->second;
    return true;
  }

  void remember(std::string_view key, std::string_view value) {
    if (key.size() > kMaxPart || value.size() > kMaxPart) return;
    std::lock_guard lock(mu_);
    auto [it, added] = values_.try_emplace(std::string(key), value);
    if (!added && it->second == value) return;
    it->second = value;
    const std::string r = record(key, value);
    if (fd_ < 0 || size_ + r.size() > kMaxFileBytes) return;
    // One write with O_APPEND: records of processes sharing the file do
    // not interleave.
    if (write_all(fd_, r)) size_ += r.size();
  }

 private:
  void open() {
    const std::string dir = cache_dir();
    std::error_code ec;
    if (dir.empty() || (std::filesystem::create_directories(dir, ec), ec)) {
      spdlog::debug("answer cache: no directory ({}); answers are asked again next run",
                    ec ? ec.message() : "no HOME");
      return;
    }
    const std::string path = dir + "/" + file_name();
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd_ < 0) {
      spdlog::debug("answer cache: cannot open {}: {}", path, std::strerror(errno));
      return;
    }
    ::flock(fd_, LOCK_EX);
    load();
    ::flock(fd_, LOCK_UN);
    spdlog::debug("answer cache: {} answers from {}", values_.size(), path);
  }

  // With the file locked: reads every whole record; a torn or foreign tail
  // is cut off, so that later records land where they can be read.
  void load() {
    struct stat st {};
    const size_t size = ::fstat(fd_, &st) == 0 ? static_cast<size_t>(st.st_size) : 0;
    std::string bytes(std::min(size, kMaxFileBytes), '\0');
    if (::pread(fd_, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size()))
      bytes.clear();
    size_t at = bytes.compare(0, kMagic.size(), kMagic) == 0 ? kMagic.size() : 0;
    while (at && at + 8 <= bytes.size()) {
      uint32_t sizes[2];
      std::memcpy(sizes, bytes.data() + at, sizeof sizes);
      if (sizes[0] > kMaxPart || sizes[1] > kMaxPart ||
          bytes.size() - at - 8 < size_t{sizes[0]} + sizes[1])
        break;
      values_.insert_or_assign(bytes.substr(at + 8, sizes[0]),
                               bytes.substr(at + 8 + sizes[0], sizes[1]));
      at += 8 + sizes[0] + sizes[1];
    }
    size_ = at;
    if (at == bytes.size() && at) return;
    if (::ftruncate(fd_, static_cast<off_t>(at)) != 0 || (!at && !write_all(fd_, kMagic))) {
      ::close(fd_);
      fd_ = -1;
      return;
    }
    size_ = at ? at : kMagic.size();
  }

  std::mutex mu_;
  std::unordered_map<std::string, std::string> values_;
  int fd_ = -1;  // appended to; -1 when there is no file
  size_t size_ = 0;
};

Store& store() {
  static Store* s = new Store;  // never freed: used until exit
  return *s;
}

}  // namespace

bool find(std::string_view key, std::string* value) { return store().find(key, value); }

void remember(std::string_view key, std::string_view value) { store().remember(key, value); }

}  // namespace scuda::client::answers
