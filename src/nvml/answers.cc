// What the NVML stand-in answers without asking the server. NVML counts
// nvmlInit calls and shuts down at the matching nvmlShutdown, so only the
// first init and the last shutdown reach the server. And some answers cannot
// change while NVML stays initialised (handling "cached" in
// codegen/nvml_annotations.toml): PyTorch's device_count() calls nvmlInit
// and nvmlDeviceGetCount_v2 each time (docs/bench/training.md, "Figures cited by the code").
#include <algorithm>
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

// `op` on every server in turn, until one fails; with no session, on the
// first, which says so.
nvmlReturn_t on_every_server(uint32_t op, const protocol::Writer& request,
                             std::vector<uint8_t>* reply) {
  const uint32_t servers = std::max(server_count(), 1u);
  nvmlReturn_t rc = NVML_SUCCESS;
  for (uint32_t s = 0; s < servers && rc == NVML_SUCCESS; ++s) {
    const OnServer on(s);
    rc = ask_server(op, request, reply);
  }
  return rc;
}

// The lock is held across the requests, so inits and shutdowns count in order.
nvmlReturn_t init(uint32_t op, const protocol::Writer& request, std::vector<uint8_t>* reply) {
  std::lock_guard lock(answers().mu);
  if (answers().inits > 0) {
    ++answers().inits;
    reply->clear();
    return NVML_SUCCESS;
  }
  const nvmlReturn_t rc = on_every_server(op, request, reply);
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
  const nvmlReturn_t rc = on_every_server(protocol::kOp_nvmlShutdown, request, reply);
  if (rc == NVML_SUCCESS) {
    answers().inits = 0;
    answers().kept.clear();
  }
  return rc;
}

}  // namespace

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
