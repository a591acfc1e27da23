// What every entry point of the NVML stand-in builds on: the mode (remote or
// pass-through), requests over libcuda.so.1's connection, and handle ids.
#pragma once

#include <nvml.h>

#include <cstdint>
#include <initializer_list>
#include <vector>

#include "common/nvml_table.h"
#include "protocol/codec.h"
#include "protocol/handle_ids.h"

namespace scuda::nvml {

// True when no server is configured: every call goes to the local NVML.
bool passthrough();
// NVIDIA's NVML on this machine, for pass-through mode.
const NvmlTable& local_nvml();
// What a pass-through call returns when the local NVML lacks the function.
nvmlReturn_t local_missing();

// Logs an entry point at trace level (SCUDA_LOG_LEVEL=trace).
void trace_entry(const char* name);

// Logs the function's name once per process and returns NVML_ERROR_NOT_SUPPORTED.
nvmlReturn_t unsupported(const char* name);
// Logs a malformed reply from the server and returns NVML_ERROR_UNKNOWN.
nvmlReturn_t bad_reply(const char* name);

// A fresh handle id, unique in the session: NVML's ids come from a range far
// above the driver stand-in's, since both share the session's handle table.
// The id carries the server the calling thread's requests go to, so that
// later calls naming the handle go there too.
uint64_t new_handle_id();

// How many servers the session has (devices.cc numbers devices across
// them); 1 when no session can be opened, so that a request to the first
// says why.
uint32_t server_count();
// The server handle id `id` was made on (0 for an id of no server).
uint32_t server_of(uint64_t id);
// The server the calling thread's requests go to now.
uint32_t current_server();
// True when every id in `ids` was made on one server.
bool same_server(std::initializer_list<uint64_t> ids);
// Logs once per function that it named handles of two servers, and returns
// NVML_ERROR_NOT_SUPPORTED: no server knows the other's handles.
nvmlReturn_t across_servers(const char* name);
// True between the first nvmlInit and the last nvmlShutdown (answers.cc).
bool initialised();
// A pair query naming handles `ids` of two servers, whose answer is known:
// no session maps another server's memory, so the pair is never usable as
// peers. Sets *out to `value`; fails as NVML would for a null handle or
// `out`, or before nvmlInit.
template <class T, class V>
nvmlReturn_t answer_across(std::initializer_list<uint64_t> ids, T* out, V value) {
  if (!initialised()) return NVML_ERROR_UNINITIALIZED;
  for (uint64_t id : ids)
    if (id == 0) return NVML_ERROR_INVALID_ARGUMENT;
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  *out = static_cast<T>(value);
  return NVML_SUCCESS;
}

// While it lives, the calling thread's requests go to server `server` (0
// before any OnServer), as do the handles they make.
class OnServer {
 public:
  explicit OnServer(uint32_t server);
  ~OnServer();
  OnServer(const OnServer&) = delete;
  OnServer& operator=(const OnServer&) = delete;

 private:
  uint32_t before_;
};

using protocol::handle_from_id;
using protocol::handle_id;

// Sends request `op` through libcuda.so.1's session (opening it if needed),
// to the server OnServer chose, and returns the server's nvmlReturn_t, leaving the rest of the
// reply in *reply. NVML_ERROR_DRIVER_NOT_LOADED when no session can be opened,
// NVML_ERROR_GPU_IS_LOST once the connection is lost.
nvmlReturn_t ask_server(uint32_t op, const protocol::Writer& request, std::vector<uint8_t>* reply);

// ask_server, but nested nvmlInit* and nvmlShutdown calls are answered here
// (answers.cc), and the outermost go to every server. What the generated
// stubs call.
nvmlReturn_t call(uint32_t op, const protocol::Writer& request, std::vector<uint8_t>* reply);

// call, for the stub of a "cached" function: a successful answer is kept by
// `key` (the call's inputs) until NVML's last nvmlShutdown.
nvmlReturn_t cached_call(uint32_t op, const protocol::Writer& key, const protocol::Writer& request,
                         std::vector<uint8_t>* reply);

}  // namespace scuda::nvml

// Every entry point starts here: traced, and in pass-through mode answered by
// the local NVML's `name(args...)`.
#define SCUDA_NVML_PASSTHROUGH(name, ...)                             \
  do {                                                                \
    ::scuda::nvml::trace_entry(#name);                                \
    if (::scuda::nvml::passthrough()) {                               \
      auto fn_ = ::scuda::nvml::local_nvml().name;                    \
      return fn_ ? fn_(__VA_ARGS__) : ::scuda::nvml::local_missing(); \
    }                                                                 \
  } while (0)
