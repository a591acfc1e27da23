// The GPU monitor: a child process of the listener that fills the session
// table's GPU figures (memory used and total, utilisation) and each
// session's device memory, once a second from NVML; without NVML, once from
// the driver (names and total memory only). A process of its own, because
// the listener must never load NVIDIA's libraries: its sessions fork from it.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "server/status/session_table.h"

namespace scuda::server {

// Forks the monitor; its pid, or -1 if fork failed. `nvml_path` and
// `driver_path`: as `scuda server --nvml` and `--driver` (empty: the usual
// places); `offered`: the UUIDs of the GPUs the server offers, the ones
// NVML's figures are read for (server/nvml/offered_devices.h).
pid_t start_gpu_monitor(const std::string& nvml_path, const std::string& driver_path,
                        const std::vector<std::string>& offered, SessionTable* table);

}  // namespace scuda::server
