// What the NVML stand-in answers without asking the server. NVML counts
// nvmlInit calls and shuts down at the matching nvmlShutdown, so only the
// first init and the last shutdown reach the server. And some answers cannot
// change while NVML stays initialised (handling "cached" in
// codegen/nvml_annotations.toml): PyTorch's device_count() calls nvmlInit
// and nvmlDeviceGetCount_v2 each time (docs/bench/training.md, "Figures cited by the code").
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "common/lock_order.h"
#include "common/process_wide.h"
#include "nvml/runtime.h"
#include "nvml_ops.h"

namespace scuda::nvml {

namespace {

struct Answers {
  RankedMutex mu{LockRank::kNvmlAnswers, "Answers::mu"};
  unsigned inits = 0;  // nvmlInit calls not yet shut down
  std::map<std::pair<uint32_t, std::string>, std::vector<uint8_t>> kept;  // (op, key)
};

Answers& answers() { return scuda::process_wide<Answers>(); }

bool is_init(uint32_t op) {
  return op == protocol::kOp_nvmlInit || op == protocol::kOp_nvmlInit_v2 ||
         op == protocol::kOp_nvmlInitWithFlags;
}

// Init on every server in turn. When one fails, the servers before it are
// shut down again, so that every server's count stays as the client's.
nvmlReturn_t init_everywhere(uint32_t op, const protocol::Writer& request,
                             std::vector<uint8_t>* reply) {
  for (uint32_t s = 0, n = server_count(); s < n; ++s) {
    const OnServer on(s);
    const nvmlReturn_t rc = ask_server(op, request, reply);
    if (rc == NVML_SUCCESS) continue;
    std::vector<uint8_t> ignored;
    for (uint32_t back = 0; back < s; ++back) {
      const OnServer undo(back);
      ask_server(protocol::kOp_nvmlShutdown, protocol::Writer{}, &ignored);
    }
    return rc;
  }
  return NVML_SUCCESS;
}

// Shutdown on every server, whatever one answers. A server that is gone,
// or already shut down (an earlier shutdown that failed elsewhere), is
// done; the first other failure is returned.
nvmlReturn_t shutdown_everywhere(const protocol::Writer& request, std::vector<uint8_t>* reply) {
  nvmlReturn_t first = NVML_SUCCESS;
  const uint32_t n = server_count();
  for (uint32_t s = 0; s < n; ++s) {
    const OnServer on(s);
    const nvmlReturn_t rc = ask_server(protocol::kOp_nvmlShutdown, request, reply);
    const bool done = rc == NVML_SUCCESS ||
                      (n > 1 && (rc == NVML_ERROR_UNINITIALIZED || rc == NVML_ERROR_GPU_IS_LOST));
    if (!done && first == NVML_SUCCESS) first = rc;
  }
  return first;
}

// The lock is held across the requests, so inits and shutdowns count in order.
nvmlReturn_t init(uint32_t op, const protocol::Writer& request, std::vector<uint8_t>* reply) {
  std::lock_guard lock(answers().mu);
  if (answers().inits > 0) {
    ++answers().inits;
    reply->clear();
    return NVML_SUCCESS;
  }
  const nvmlReturn_t rc = init_everywhere(op, request, reply);
  if (rc == NVML_SUCCESS) answers().inits = 1;
  return rc;
}

nvmlReturn_t shutdown(const protocol::Writer& request, std::vector<uint8_t>* reply) {
  std::lock_guard lock(answers().mu);
  reply->clear();
  if (answers().inits == 0) return NVML_ERROR_UNINITIALIZED;
  if (answers().inits > 1) {
    --answers().inits;
    return NVML_SUCCESS;
  }
  const nvmlReturn_t rc = shutdown_everywhere(request, reply);
  if (rc == NVML_SUCCESS) {
    answers().inits = 0;
    answers().kept.clear();
  }
  return rc;
}

}  // namespace

bool initialised() {
  std::lock_guard lock(answers().mu);
  return answers().inits > 0;
}

nvmlReturn_t call(uint32_t op, const protocol::Writer& request, std::vector<uint8_t>* reply) {
  if (is_init(op)) return init(op, request, reply);
  if (op == protocol::kOp_nvmlShutdown) return shutdown(request, reply);
  return ask_server(op, request, reply);
}

nvmlReturn_t cached_call(uint32_t op, const protocol::Writer& key, const protocol::Writer& request,
                         std::vector<uint8_t>* reply) {
  // The same question to another server may have another answer.
  std::string asked(key.data().begin(), key.data().end());
  asked.push_back(static_cast<char>(current_server()));
  std::pair id{op, std::move(asked)};
  {
    std::lock_guard lock(answers().mu);
    auto it = answers().kept.find(id);
    if (it != answers().kept.end()) {
      *reply = it->second;
      return NVML_SUCCESS;
    }
  }
  const nvmlReturn_t rc = ask_server(op, request, reply);
  std::lock_guard lock(answers().mu);
  if (rc == NVML_SUCCESS && answers().inits > 0) answers().kept[std::move(id)] = *reply;
  return rc;
}

}  // namespace scuda::nvml
