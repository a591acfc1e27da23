#include "client/modules/record_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "client/cache_dir.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

// A file this big is read no further and grows no more.
constexpr size_t kMaxFileBytes = size_t{64} << 20;
constexpr uint32_t kMaxPart = 1 << 20;  // a key's or a value's bytes

bool turned_off() {
  const char* flag = std::getenv("SCUDA_ANSWER_CACHE");
  return flag && (std::strcmp(flag, "off") == 0 || std::strcmp(flag, "0") == 0);
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

}  // namespace

std::string hashed_name(std::string_view prefix, std::string_view bytes) {
  const protocol::ImageHash hash = protocol::image_hash(bytes.data(), bytes.size());
  std::string name(prefix);
  for (int i = 0; i < 8; ++i) name += fmt::format("{:02x}", hash[i]);
  return name;
}

RecordFile::RecordFile(const std::string& name, std::string_view magic) : magic_(magic) {
  if (!turned_off()) open(name);
}

bool RecordFile::find(std::string_view key, std::string* value) {
  std::lock_guard lock(mu_);
  auto it = values_.find(std::string(key));
  if (it == values_.end()) return false;
  *value = it->second;
  return true;
}

void RecordFile::remember(std::string_view key, std::string_view value) {
  if (key.size() > kMaxPart || value.size() > kMaxPart) return;
  std::lock_guard lock(mu_);
  if (auto it = values_.find(std::string(key)); it != values_.end() && it->second == value) return;
  keep(std::string(key), std::string(value));
  const std::string r = record(key, value);
  if (fd_ < 0 || size_ + r.size() > kMaxFileBytes) return;
  // One write with O_APPEND: records of processes sharing the file do not
  // interleave.
  if (write_all(fd_, r)) size_ += r.size();
}

std::vector<std::pair<std::string, std::string>> RecordFile::entries() {
  std::lock_guard lock(mu_);
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(order_.size());
  for (const std::string& key : order_) out.emplace_back(key, values_.at(key));
  return out;
}

void RecordFile::keep(std::string key, std::string value) {
  auto [it, added] = values_.insert_or_assign(std::move(key), std::move(value));
  if (added) order_.push_back(it->first);
}

void RecordFile::open(const std::string& name) {
  const std::string dir = cache_dir();
  std::error_code ec;
  if (dir.empty() || (std::filesystem::create_directories(dir, ec), ec)) {
    spdlog::debug("{}: no cache directory ({}); nothing is kept for the next run", name,
                  ec ? ec.message() : "no HOME");
    return;
  }
  const std::string path = dir + "/" + name;
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    spdlog::debug("cannot open {}: {}", path, std::strerror(errno));
    return;
  }
  ::flock(fd_, LOCK_EX);
  load();
  ::flock(fd_, LOCK_UN);
  spdlog::debug("{} records from {}", values_.size(), path);
}

// With the file locked: reads every whole record; a torn or foreign tail is
// cut off, so that later records land where they can be read.
void RecordFile::load() {
  struct stat st {};
  const size_t size = ::fstat(fd_, &st) == 0 ? static_cast<size_t>(st.st_size) : 0;
  std::string bytes(std::min(size, kMaxFileBytes), '\0');
  if (::pread(fd_, bytes.data(), bytes.size(), 0) != static_cast<ssize_t>(bytes.size()))
    bytes.clear();
  size_t at = bytes.compare(0, magic_.size(), magic_) == 0 ? magic_.size() : 0;
  while (at && at + 8 <= bytes.size()) {
    uint32_t sizes[2];
    std::memcpy(sizes, bytes.data() + at, sizeof sizes);
    if (sizes[0] > kMaxPart || sizes[1] > kMaxPart ||
        bytes.size() - at - 8 < size_t{sizes[0]} + sizes[1])
      break;
    keep(bytes.substr(at + 8, sizes[0]), bytes.substr(at + 8 + sizes[0], sizes[1]));
    at += 8 + sizes[0] + sizes[1];
  }
  size_ = at;
  if (at == bytes.size() && at) return;
  if (::ftruncate(fd_, static_cast<off_t>(at)) != 0 || (!at && !write_all(fd_, magic_))) {
    ::close(fd_);
    fd_ = -1;
    return;
  }
  size_ = at ? at : magic_.size();
}

}  // namespace scuda::client
