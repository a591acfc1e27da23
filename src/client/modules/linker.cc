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

#include "client/runtime.h"
#include "client/transport/session.h"
#include "custom.h"
#include "protocol/jit_options.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

using protocol::JitValue;

// Where the program wants a log: its buffer and the value slot of its size
// option, which receives the bytes written.
struct LogTarget {
  char* buffer = nullptr;
  void** size_slot = nullptr;
};

struct LinkState {
  protocol::Writer options;  // the create options, as they cross
  LogTarget info, error;
  void** wall_time_slot = nullptr;
  uint32_t inputs = 0;
  protocol::Writer input_bytes;
  std::vector<uint8_t> image;  // cuLinkComplete's answer, owned until cuLinkDestroy
};

LinkState* state_of(CUlinkState s) { return reinterpret_cast<LinkState*>(s); }

// Encodes the options that cross; with `state`, notes where the logs and
// the wall time go. Options naming arrays of client pointers are refused.
CUresult put_options(unsigned n, const CUjit_option* options, void** values, protocol::Writer& w,
                     LinkState* state) {
  if (n > protocol::kMaxJitOptions || (n && (!options || !values))) return CUDA_ERROR_INVALID_VALUE;
  std::vector<std::pair<uint32_t, uint64_t>> crossing;
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
        crossing.emplace_back(options[i], value);
        break;
      case JitValue::kWallTime:
        if (state) state->wall_time_slot = &values[i];
        if (state) crossing.emplace_back(options[i], 0);
        break;
      case JitValue::kNumber: crossing.emplace_back(options[i], value); break;
    }
  }
  w.u32(static_cast<uint32_t>(crossing.size()));
  for (auto [option, value] : crossing) {
    w.u32(option);
    w.u64(value);
  }
  return CUDA_SUCCESS;
}

CUresult add_input(LinkState* st, CUjitInputType type, const void* data, size_t size,
                   const char* name, unsigned n, CUjit_option* options, void** values) {
  if (!st || !data || !size) return CUDA_ERROR_INVALID_VALUE;
  if (st->inputs == protocol::kMaxLinkInputs) return CUDA_ERROR_INVALID_VALUE;
  protocol::Writer w;
  w.u32(type);
  w.str(name ? name : "");
  w.blob(data, size);
  if (CUresult rc = put_options(n, options, values, w, nullptr); rc != CUDA_SUCCESS) return rc;
  st->input_bytes.bytes(w.data().data(), w.size());
  ++st->inputs;
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
  protocol::Writer w;
  w.bytes(st->options.data().data(), st->options.size());
  w.u32(st->inputs);
  w.bytes(st->input_bytes.data().data(), st->input_bytes.size());
  std::vector<uint8_t> reply;
  if (CUresult rc = call(protocol::kOpLink, w, &reply); rc != CUDA_SUCCESS) return rc;
  protocol::Reader r(reply);
  const auto linked = static_cast<CUresult>(r.u32());
  const std::string_view bytes = r.blob();
  const std::string_view info = r.blob();
  const std::string_view error = r.blob();
  const uint32_t wall = r.u32();
  if (!r.done()) return bad_reply("cuLinkComplete");
  deliver_log(st->info, info);
  deliver_log(st->error, error);
  if (st->wall_time_slot) std::memcpy(st->wall_time_slot, &wall, sizeof wall);
  if (!error.empty()) spdlog::debug("cuLinkComplete: {}", error);
  if (linked != CUDA_SUCCESS) return linked;
  st->image.assign(bytes.begin(), bytes.end());
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
