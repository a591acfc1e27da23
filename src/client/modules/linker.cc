// The JIT linker (cuLink*). The link state lives on the client: options and
// inputs (files read here, where the program named them) are kept until
// cuLinkComplete sends them in one request; the session links with its
// driver and answers with the image, which the state owns, and the logs,
// which are written into the program's buffers (docs/protocol.md, "link").
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/op_calls.h"
#include "client/runtime.h"
#include "client/transport/session.h"
#include "custom.h"
#include "protocol/jit_options.h"
#include "protocol/op_layouts.h"

namespace scuda::client {

namespace {

using protocol::JitValue;

// Where the program wants a log: its buffer and the value slot of its size
// option, which receives the bytes written.
struct LogTarget {
  char* buffer = nullptr;
  void** size_slot = nullptr;
};

// An input as the program gave it, kept until cuLinkComplete.
struct Input {
  uint32_t type = 0;
  std::string name;
  std::string data;
  protocol::op::JitOptions options;
};

struct LinkState {
  protocol::op::JitOptions options;  // the create options, as they cross
  LogTarget info, error;
  void** wall_time_slot = nullptr;
  std::vector<Input> inputs;
  std::string image;  // cuLinkComplete's answer, owned until cuLinkDestroy
};

LinkState* state_of(CUlinkState s) { return reinterpret_cast<LinkState*>(s); }

// Encodes the options that cross; with `state`, notes where the logs and
// the wall time go. Options naming arrays of client pointers are refused.
CUresult put_options(unsigned n, const CUjit_option* options, void** values,
                     protocol::op::JitOptions& crossing, LinkState* state) {
  if (n > protocol::kMaxJitOptions || (n && (!options || !values))) return CUDA_ERROR_INVALID_VALUE;
  auto cross = [&](uint32_t key, uint64_t value) {
    crossing.keys.push_back(key);
    crossing.values.push_back(value);
  };
  for (unsigned i = 0; i < n; ++i) {
    const uint64_t value = reinterpret_cast<uintptr_t>(values[i]);
    switch (protocol::jit_value(options[i])) {
      case JitValue::kRefused:
        spdlog::error(
            "cuLink: JIT option {} names arrays of client pointers, which the server's "
            "driver cannot read",
            static_cast<int>(options[i]));
        return CUDA_ERROR_NOT_SUPPORTED;
      case JitValue::kLogBuffer:
        if (state)
          (options[i] == CU_JIT_INFO_LOG_BUFFER ? state->info : state->error).buffer =
              static_cast<char*>(values[i]);
        break;
      case JitValue::kLogSize:
        if (!state) break;
        (options[i] == CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES ? state->info : state->error).size_slot =
            &values[i];
        cross(options[i], value);
        break;
      case JitValue::kWallTime:
        if (state) state->wall_time_slot = &values[i];
        if (state) cross(options[i], 0);
        break;
      case JitValue::kNumber: cross(options[i], value); break;
    }
  }
  return CUDA_SUCCESS;
}

CUresult add_input(LinkState* st, CUjitInputType type, const void* data, size_t size,
                   const char* name, unsigned n, CUjit_option* options, void** values) {
  if (!st || !data || !size) return CUDA_ERROR_INVALID_VALUE;
  if (st->inputs.size() == protocol::kMaxLinkInputs) return CUDA_ERROR_INVALID_VALUE;
  Input input{type, name ? name : "", std::string(static_cast<const char*>(data), size), {}};
  if (CUresult rc = put_options(n, options, values, input.options, nullptr); rc != CUDA_SUCCESS)
    return rc;
  st->inputs.push_back(std::move(input));
  return CUDA_SUCCESS;
}

// Copies a log into the program's buffer, NUL-terminated and cut to the
// size it gave, and writes the bytes used into its size slot.
void deliver_log(const LogTarget& t, std::string_view log) {
  if (!t.buffer || !t.size_slot) return;
  const size_t room = reinterpret_cast<uintptr_t>(*t.size_slot);
  if (room == 0) return;
  const size_t n = std::min(log.size(), room - 1);
  std::memcpy(t.buffer, log.data(), n);
  t.buffer[n] = '\0';
  *t.size_slot = reinterpret_cast<void*>(static_cast<uintptr_t>(n + 1));
}

CUresult complete(LinkState* st, void** image, size_t* size) {
  if (!st || !image || !size) return CUDA_ERROR_INVALID_VALUE;
  protocol::op::Link::Request q{st->options, {}};
  for (const Input& x : st->inputs) q.inputs.push_back({x.type, x.name, x.data, x.options});
  protocol::op::Link::Reply reply;
  if (CUresult rc = ask<protocol::op::Link>(q, &reply); rc != CUDA_SUCCESS) return rc;
  deliver_log(st->info, reply.info_log);
  deliver_log(st->error, reply.error_log);
  if (st->wall_time_slot) std::memcpy(st->wall_time_slot, &reply.wall_ms, sizeof reply.wall_ms);
  if (!reply.error_log.empty()) spdlog::debug("cuLinkComplete: {}", reply.error_log);
  if (reply.result != CUDA_SUCCESS) return static_cast<CUresult>(reply.result);
  st->image = std::move(reply.image);
  *image = st->image.data();
  *size = st->image.size();
  return CUDA_SUCCESS;
}

}  // namespace

}  // namespace scuda::client

using scuda::client::state_of;

CUresult scuda::client::custom::cuLinkCreate_v2(unsigned int n, CUjit_option* options,
                                                void** values, CUlinkState* out) {
  if (!scuda::client::connection()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  auto* st = new scuda::client::LinkState;
  if (CUresult rc = scuda::client::put_options(n, options, values, st->options, st);
      rc != CUDA_SUCCESS) {
    delete st;
    return rc;
  }
  *out = reinterpret_cast<CUlinkState>(st);
  return CUDA_SUCCESS;
}

CUresult scuda::client::custom::cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void* data,
                                                 size_t size, const char* name, unsigned int n,
                                                 CUjit_option* options, void** values) {
  return scuda::client::add_input(state_of(state), type, data, size, name, n, options, values);
}

// The file is the client's: it is read here, and crosses as data.
CUresult scuda::client::custom::cuLinkAddFile_v2(CUlinkState state, CUjitInputType type,
                                                 const char* path, unsigned int n,
                                                 CUjit_option* options, void** values) {
  if (!path) return CUDA_ERROR_INVALID_VALUE;
  std::ifstream in(path, std::ios::binary);
  if (!in) return CUDA_ERROR_FILE_NOT_FOUND;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (type == CU_JIT_INPUT_PTX) bytes.push_back('\0');  // PTX files are text
  return scuda::client::add_input(state_of(state), type, bytes.data(), bytes.size(), path, n,
                                  options, values);
}

CUresult scuda::client::custom::cuLinkComplete(CUlinkState state, void** image, size_t* size) {
  return scuda::client::complete(state_of(state), image, size);
}

CUresult scuda::client::custom::cuLinkDestroy(CUlinkState state) {
  if (!state) return CUDA_ERROR_INVALID_HANDLE;
  delete state_of(state);
  return CUDA_SUCCESS;
}
