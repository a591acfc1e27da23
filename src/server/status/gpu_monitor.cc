#include "server/status/gpu_monitor.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <cstring>
#include <unordered_map>
#include <vector>

#include "common/driver_table.h"
#include "common/nvml_table.h"
#include "protocol/handshake.h"
#include "server/nvml/offered_devices.h"
#include "server/session/snapshot.h"

namespace scuda::server {

namespace {

void set_name(GpuSlot* g, const std::string& name) {
  const size_t n = std::min(sizeof g->name - 1, name.size());
  std::memcpy(g->name, name.data(), n);
  g->name[n] = '\0';
}

// Writes `gpus` under the table's GPU sequence, so readers see all or none.
void publish(SessionTable* table, const std::vector<GpuSlot>& gpus, const char* source) {
  table->gpu_sequence.fetch_add(1, std::memory_order_acq_rel);
  table->gpu_count = static_cast<uint32_t>(std::min(gpus.size(), kMaxGpus));
  for (uint32_t i = 0; i < table->gpu_count; ++i) table->gpus[i] = gpus[i];
  std::strncpy(table->gpu_source, source, sizeof table->gpu_source - 1);
  table->gpu_sequence.fetch_add(1, std::memory_order_acq_rel);
}

// Device memory per process on `device`, added into `per_pid`.
void add_process_memory(const NvmlTable& nvml, nvmlDevice_t device,
                        std::unordered_map<uint32_t, uint64_t>* per_pid) {
  if (!nvml.nvmlDeviceGetComputeRunningProcesses_v3) return;
  nvmlProcessInfo_t infos[256];
  unsigned int count = 256;
  if (nvml.nvmlDeviceGetComputeRunningProcesses_v3(device, &count, infos) != NVML_SUCCESS) return;
  for (unsigned int i = 0; i < count && i < 256; ++i)
    (*per_pid)[infos[i].pid] += infos[i].usedGpuMemory;
}

GpuSlot read_gpu(const NvmlTable& nvml, nvmlDevice_t device) {
  GpuSlot g;
  char name[96] = {};
  if (nvml.nvmlDeviceGetName && nvml.nvmlDeviceGetName(device, name, sizeof name) == NVML_SUCCESS)
    set_name(&g, name);
  nvmlMemory_t memory{};
  if (nvml.nvmlDeviceGetMemoryInfo &&
      nvml.nvmlDeviceGetMemoryInfo(device, &memory) == NVML_SUCCESS) {
    g.memory_used = memory.used;
    g.memory_total = memory.total;
    g.used_known = true;
  }
  nvmlUtilization_t use{};
  if (nvml.nvmlDeviceGetUtilizationRates &&
      nvml.nvmlDeviceGetUtilizationRates(device, &use) == NVML_SUCCESS)
    g.utilization = static_cast<int32_t>(use.gpu);
  return g;
}

// Gives each active session the device memory NVML lists for its process.
void publish_session_memory(SessionTable* table,
                            const std::unordered_map<uint32_t, uint64_t>& per_pid) {
  for (SessionSlot& slot : table->slots) {
    if (slot.state.load(std::memory_order_acquire) != kSlotActive) continue;
    auto it = per_pid.find(static_cast<uint32_t>(slot.pid.load()));
    slot.device_memory.store(it == per_pid.end() ? 0 : it->second, std::memory_order_relaxed);
  }
}

// The GPUs the server offers, as its sessions' NVML shows them.
void poll_nvml(const NvmlTable& nvml, const std::vector<std::string>& offered,
               SessionTable* table) {
  OfferedDevices view;
  if (offered_devices(nvml, offered, &view) != NVML_SUCCESS) view.devices.clear();
  std::vector<GpuSlot> gpus;
  std::unordered_map<uint32_t, uint64_t> per_pid;
  for (size_t i = 0; i < view.devices.size() && i < kMaxGpus; ++i) {
    gpus.push_back(read_gpu(nvml, view.devices[i]));
    add_process_memory(nvml, view.devices[i], &per_pid);
  }
  publish(table, gpus, "NVML");
  publish_session_memory(table, per_pid);
}

bool nvml_usable(const NvmlTable& nvml) {
  return nvml.nvmlInit_v2 && nvml.nvmlDeviceGetCount_v2 && nvml.nvmlDeviceGetHandleByIndex_v2 &&
         nvml.nvmlInit_v2() == NVML_SUCCESS;
}

// Without NVML: the driver's names and totals, once (memory in use needs a
// context on each GPU, which would take memory from the sessions).
void report_from_driver(const std::string& driver_path, SessionTable* table) {
  DriverTable d;
  protocol::Welcome w;
  std::string error;
  if (!load_driver(driver_path, &d, &error) || !take_snapshot(d, &w, &error)) return;
  std::vector<GpuSlot> gpus;
  for (const protocol::DeviceInfo& device : w.devices) {
    GpuSlot g;
    set_name(&g, device.name);
    g.memory_total = device.total_mem;
    gpus.push_back(g);
  }
  publish(table, gpus, "driver");
}

[[noreturn]] void monitor(const std::string& nvml_path, const std::string& driver_path,
                          const std::vector<std::string>& offered, SessionTable* table) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  signal(SIGINT, SIG_IGN);  // the listener decides when the server stops
  NvmlTable nvml;
  std::string error;
  if (!load_nvml(nvml_path, &nvml, &error) || !nvml_usable(nvml)) {
    report_from_driver(driver_path, table);
    _exit(0);
  }
  for (;;) {
    poll_nvml(nvml, offered, table);
    sleep(1);
  }
}

}  // namespace

pid_t start_gpu_monitor(const std::string& nvml_path, const std::string& driver_path,
                        const std::vector<std::string>& offered, SessionTable* table) {
  const pid_t pid = fork();
  if (pid == 0) monitor(nvml_path, driver_path, offered, table);
  return pid;
}

}  // namespace scuda::server
