// A consistent copy of the session table, for `scuda status` and /metrics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "server/status/session_table.h"

namespace scuda::server {

struct SessionState {
  int32_t pid = 0;
  std::string peer;
  std::string program;
  std::string token;  // "" for an unnamed token
  int64_t age_ms = 0;
  uint64_t bytes_in = 0, bytes_out = 0, requests = 0, errors = 0, device_memory = 0;
};

// A client waiting in the admission queue.
struct QueuedState {
  int32_t pid = 0;
  std::string peer;
  std::string token;
  int32_t priority = 0;
  uint32_t position = 0;  // 1: first in line; 0: not yet placed
  int64_t waited_ms = 0;
};

struct GpuState {
  uint32_t index = 0;
  std::string name;
  uint64_t memory_used = 0, memory_total = 0;
  bool used_known = false;
  int32_t utilization = -1;  // percent; -1: not known
};

struct ServerState {
  int64_t uptime_ms = 0;
  std::vector<SessionState> sessions;  // the active ones
  std::vector<QueuedState> queue;      // first in line first
  std::vector<GpuState> gpus;
  std::string gpu_source;  // "NVML", "driver", or "" before the monitor's first report
  uint64_t sessions_started = 0;
  // Every session's, ended ones included: they only grow.
  uint64_t bytes_in = 0, bytes_out = 0, requests = 0, errors = 0;
};

// Copies what the table says now.
ServerState read_state(const SessionTable& table);

}  // namespace scuda::server
