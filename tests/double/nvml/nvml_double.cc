// Fake GPUs with fixed facts (nvml_double.h): one, or one per UUID in the
// comma-separated NVML_DOUBLE_UUID (at most four), so that two servers'
// GPUs differ and a server can offer some of its host's; NVML_DOUBLE_BUS_ID
// likewise names their PCI bus ids. A process list holds the calling process
// (the scuda session), its children and its parent's (a server's sessions,
// whether the listener or its GPU monitor asks, as a real GPU lists each
// process with a context) and one other tenant.
#include "nvml_double.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

struct nvmlDevice_st {
  unsigned int index;
};

namespace {

constexpr unsigned int kMaxDevices = 4;
nvmlDevice_st g_devices[kMaxDevices] = {{0}, {1}, {2}, {3}};
int g_init_count = 0;

// The non-empty comma-separated entries of environment variable `name`;
// more than kMaxDevices is a mistake in the test, which stops it.
std::vector<std::string> entries(const char* name) {
  std::vector<std::string> out;
  const char* value = std::getenv(name);
  std::string text(value ? value : "");
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find(',', at), text.size());
    if (end > at) out.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  if (out.size() > kMaxDevices) {
    std::fprintf(stderr, "nvml double: %s names more than %u devices\n", name, kMaxDevices);
    std::abort();
  }
  return out;
}

unsigned int device_count() {
  const size_t n = entries("NVML_DOUBLE_UUID").size();
  return n ? static_cast<unsigned int>(n) : 1;
}

bool ours(nvmlDevice_t device) {
  return device >= g_devices && device < g_devices + device_count();
}

std::string bus_id_text(unsigned int index) {
  const std::vector<std::string> listed = entries("NVML_DOUBLE_BUS_ID");
  if (index < listed.size()) return listed[index];
  if (index == 0) return nvml_double::kBusId;
  char text[32];
  std::snprintf(text, sizeof text, "00000000:%02X:00.0", 0x3B + index);
  return text;
}

std::string uuid_text(unsigned int index) {
  const std::vector<std::string> listed = entries("NVML_DOUBLE_UUID");
  return index < listed.size() ? listed[index] : nvml_double::kUuid;
}

// Adds the children of process `pid` to `out`, from every thread's list in
// /proc.
void add_children(const std::string& pid, std::set<unsigned int>* out) {
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/" + pid + "/task", ec)) {
    std::ifstream in(task.path() / "children");
    for (unsigned int child; in >> child;) out->insert(child);
  }
}

nvmlReturn_t copy_string(const std::string& text, char* out, unsigned int length) {
  if (!out) return NVML_ERROR_INVALID_ARGUMENT;
  if (text.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  std::memcpy(out, text.c_str(), text.size() + 1);
  return NVML_SUCCESS;
}

// The device whose `text_of` is `wanted`, as NVML's lookups find one.
nvmlReturn_t find_device(std::string (*text_of)(unsigned int), const char* wanted,
                         nvmlDevice_t* device) {
  if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (!wanted || !device) return NVML_ERROR_INVALID_ARGUMENT;
  for (unsigned int i = 0; i < device_count(); ++i) {
    if (text_of(i) != wanted) continue;
    *device = &g_devices[i];
    return NVML_SUCCESS;
  }
  return NVML_ERROR_NOT_FOUND;
}

// Checks a device query's arguments: initialised, our device, somewhere to write.
nvmlReturn_t check(nvmlDevice_t device, const void* out) {
  if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
  return ours(device) && out ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

}  // namespace

extern "C" {

nvmlReturn_t nvmlInit_v2() {
  ++g_init_count;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlInitWithFlags(unsigned int) { return nvmlInit_v2(); }

nvmlReturn_t nvmlShutdown() {
  if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
  --g_init_count;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  return copy_string(nvml_double::kDriverVersion, version, length);
}

nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  if (!version) return NVML_ERROR_INVALID_ARGUMENT;
  *version = nvml_double::kCudaVersion;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (!count) return NVML_ERROR_INVALID_ARGUMENT;
  *count = device_count();
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
  if (index >= device_count() || !device) return NVML_ERROR_INVALID_ARGUMENT;
  *device = &g_devices[index];
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char* bus_id, nvmlDevice_t* device) {
  return find_device(bus_id_text, bus_id, device);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  return find_device(uuid_text, uuid, device);
}

nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  if (nvmlReturn_t rc = check(device, index); rc != NVML_SUCCESS) return rc;
  *index = device->index;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  nvmlReturn_t rc = check(device, name);
  return rc == NVML_SUCCESS ? copy_string(nvml_double::kName, name, length) : rc;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  nvmlReturn_t rc = check(device, uuid);
  return rc == NVML_SUCCESS ? copy_string(uuid_text(device->index), uuid, length) : rc;
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) {
  if (nvmlReturn_t rc = check(device, pci); rc != NVML_SUCCESS) return rc;
  *pci = {};
  std::snprintf(pci->busId, sizeof pci->busId, "%s", bus_id_text(device->index).c_str());
  pci->bus = 0x3b + device->index;
  pci->pciDeviceId = nvml_double::kPciDeviceId;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  if (nvmlReturn_t rc = check(device, memory); rc != NVML_SUCCESS) return rc;
  *memory = {nvml_double::kMemoryTotal, nvml_double::kMemoryTotal - nvml_double::kMemoryUsed,
             nvml_double::kMemoryUsed};
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  if (nvmlReturn_t rc = check(device, utilization); rc != NVML_SUCCESS) return rc;
  *utilization = {nvml_double::kGpuUtilization, nvml_double::kMemoryUtilization};
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensor,
                                      unsigned int* temperature) {
  if (nvmlReturn_t rc = check(device, temperature); rc != NVML_SUCCESS) return rc;
  if (sensor != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
  *temperature = nvml_double::kTemperature;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) {
  if (nvmlReturn_t rc = check(device, power); rc != NVML_SUCCESS) return rc;
  *power = nvml_double::kPowerMilliwatts;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                    unsigned int* clock) {
  if (nvmlReturn_t rc = check(device, clock); rc != NVML_SUCCESS) return rc;
  *clock = type == NVML_CLOCK_MEM ? nvml_double::kMemoryClock : nvml_double::kGraphicsClock;
  return NVML_SUCCESS;
}

// The caller (the scuda session process) and one other tenant.
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* count,
                                                     nvmlProcessInfo_t* infos) {
  if (nvmlReturn_t rc = check(device, count); rc != NVML_SUCCESS) return rc;
  std::set<unsigned int> others;
  add_children(std::to_string(getpid()), &others);
  add_children(std::to_string(getppid()), &others);
  others.erase(static_cast<unsigned int>(getpid()));
  std::vector<unsigned int> pids = {static_cast<unsigned int>(getpid())};
  pids.insert(pids.end(), others.begin(), others.end());
  pids.push_back(nvml_double::kOtherTenantPid);
  const unsigned int room = *count;
  *count = static_cast<unsigned int>(pids.size());
  if (room < pids.size() || !infos) return NVML_ERROR_INSUFFICIENT_SIZE;
  for (size_t i = 0; i < pids.size(); ++i) infos[i] = {pids[i], nvml_double::kProcessMemory, 0, 0};
  return NVML_SUCCESS;
}

}  // extern "C"
