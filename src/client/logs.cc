// The driver's error log is the session process's, on the server: both dumps
// ask the session for its lines (logs-dump), and cuLogsDumpToFile writes
// them into the program's file, here. A log callback is the program's: the
// session's stand-in sends each message over the callback channel, where it
// runs.
#include "client/logs.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "client/op_calls.h"
#include "client/program_files.h"
#include "client/runtime.h"
#include "client/state.h"
#include "client/transport/callback_channel.h"
#include "common/lock_order.h"
#include "custom.h"
#include "protocol/ops.h"

namespace {

// The most the driver keeps, with its terminating NUL.
constexpr size_t kLogBytes = 25601;

// The session's log lines from *iterator (all without one), in at most
// `capacity` bytes with a NUL; advances *iterator past them.
CUresult dump(CUlogIterator* iterator, size_t capacity, unsigned flags, std::string* lines) {
  using LogsDump = scuda::protocol::op::LogsDump;
  LogsDump::Reply reply;
  if (CUresult rc = scuda::client::ask<LogsDump>(
          {iterator != nullptr, iterator ? *iterator : 0, capacity, flags}, &reply);
      rc != CUDA_SUCCESS)
    return rc;
  *lines = std::move(reply.lines);
  if (capacity && lines->size() >= capacity) return scuda::client::bad_reply("cuLogsDumpToMemory");
  if (iterator) *iterator = reply.iterator;
  return CUDA_SUCCESS;
}

}  // namespace

namespace scuda::client::parts {

struct LogCallbacks {
  scuda::RankedMutex mu{scuda::LockRank::kLeaf, "LogCallbacks::mu"};
  std::map<uint64_t, std::pair<CUlogsCallback, void*>> by_id;
};

}  // namespace scuda::client::parts

namespace {

scuda::client::parts::LogCallbacks& log_callbacks() {
  return scuda::client::client_state().log_callbacks.get();
}

CUresult register_log_callback(CUlogsCallback fn, void* data, CUlogsCallbackHandle* out) {
  if (!fn) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = scuda::client::open_callback_channel(); rc != CUDA_SUCCESS) return rc;
  const uint64_t id = scuda::client::new_handle_id();
  {
    std::lock_guard lock(log_callbacks().mu);
    log_callbacks().by_id[id] = {fn, data};
  }
  scuda::protocol::op::LogsRegister::Reply reply;
  CUresult rc = scuda::client::ask<scuda::protocol::op::LogsRegister>({id}, &reply);
  if (rc == CUDA_SUCCESS && reply.handle != id)
    rc = scuda::client::bad_reply("cuLogsRegisterCallback");
  if (rc != CUDA_SUCCESS) {
    std::lock_guard lock(log_callbacks().mu);
    log_callbacks().by_id.erase(id);
    return rc;
  }
  if (out) *out = scuda::client::handle_from_id<CUlogsCallbackHandle>(id);
  return CUDA_SUCCESS;
}

}  // namespace

namespace scuda::client {

bool run_log_callback(uint64_t id, CUlogLevel level, std::string_view message) {
  std::pair<CUlogsCallback, void*> callback;
  {
    std::lock_guard lock(log_callbacks().mu);
    auto it = log_callbacks().by_id.find(id);
    if (it == log_callbacks().by_id.end()) return false;
    callback = it->second;
  }
  std::string text(message);  // the driver hands out a writable, NUL-ended message
  callback.first(callback.second, level, text.data(), text.size());
  return true;
}

}  // namespace scuda::client

CUresult scuda::client::custom::cuLogsRegisterCallback(CUlogsCallback fn, void* data,
                                                       CUlogsCallbackHandle* out) {
  return register_log_callback(fn, data, out);
}

CUresult scuda::client::custom::cuLogsDumpToMemory(CUlogIterator* iterator, char* buffer,
                                                   size_t* size, unsigned int flags) {
  if (!buffer || !size) return CUDA_ERROR_INVALID_VALUE;
  std::string lines;
  const CUresult rc = dump(iterator, std::min(*size, kLogBytes), flags, &lines);
  if (rc != CUDA_SUCCESS) {
    *size = 0;
    return rc;
  }
  std::memcpy(buffer, lines.data(), lines.size());
  if (*size) buffer[lines.size()] = '\0';
  *size = lines.size();
  return CUDA_SUCCESS;
}

CUresult scuda::client::custom::cuLogsDumpToFile(CUlogIterator* iterator, const char* path,
                                                 unsigned int flags) {
  if (!path) return CUDA_ERROR_INVALID_VALUE;
  std::string lines;
  if (CUresult rc = dump(iterator, kLogBytes, flags, &lines); rc != CUDA_SUCCESS) return rc;
  return scuda::client::write_program_file(path, lines, "cuLogsDumpToFile");
}
