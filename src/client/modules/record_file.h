// A file of key/value records in the client's cache directory, which the
// processes of one user share: each record is appended whole in one write
// (O_APPEND), the file is read under flock, and a torn or foreign tail is
// cut off. The last record of a key is its value.
//
// SCUDA_ANSWER_CACHE=off keeps every such file closed; SCUDA_CACHE_DIR moves
// them (default $XDG_CACHE_HOME/scuda, else ~/.cache/scuda).
#pragma once

#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "common/lock_order.h"

namespace scuda::client {

// `prefix` and 16 hex digits of the SHA-256 of `bytes`: a file name per
// server, in the cache directory.
std::string hashed_name(std::string_view prefix, std::string_view bytes);

class RecordFile {
 public:
  // Opens `name` in the cache directory, `magic` being its first bytes;
  // without it, values are kept for this process only.
  RecordFile(const std::string& name, std::string_view magic);
  RecordFile(const RecordFile&) = delete;
  RecordFile& operator=(const RecordFile&) = delete;

  bool find(std::string_view key, std::string* value);
  void remember(std::string_view key, std::string_view value);
  // Every key, in the order they first appeared, with its value.
  std::vector<std::pair<std::string, std::string>> entries();

 private:
  void open(const std::string& name);
  void load();
  void keep(std::string key, std::string value);

  std::string_view magic_;
  RankedMutex mu_{LockRank::kReplyFiles, "RecordFile::mu_"};
  std::unordered_map<std::string, std::string> values_;
  std::vector<std::string> order_;
  int fd_ = -1;  // appended to; -1 when there is no file
  size_t size_ = 0;
};

}  // namespace scuda::client
