#include "server/nvml/offered_devices.h"

#include <strings.h>

#include <algorithm>

#include "server/nvml/nvml_session.h"
#include "server/session/session.h"

namespace scuda::server {

namespace {

// NVML's devices and their UUIDs, in NVML's order. A device whose handle or
// UUID NVML cannot give (no permission, lost) is left out: if the server
// offers it, it then matches nothing and NVML's own list stands.
nvmlReturn_t listed(const NvmlTable& nvml, std::vector<nvmlDevice_t>* devices,
                    std::vector<std::string>* uuids) {
  if (!nvml.nvmlDeviceGetCount_v2 || !nvml.nvmlDeviceGetHandleByIndex_v2 || !nvml.nvmlDeviceGetUUID)
    return NVML_ERROR_FUNCTION_NOT_FOUND;
  unsigned int count = 0;
  if (nvmlReturn_t rc = nvml.nvmlDeviceGetCount_v2(&count); rc != NVML_SUCCESS) return rc;
  for (unsigned int i = 0; i < count; ++i) {
    nvmlDevice_t device{};
    char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
    if (nvml.nvmlDeviceGetHandleByIndex_v2(i, &device) != NVML_SUCCESS ||
        nvml.nvmlDeviceGetUUID(device, uuid, sizeof uuid) != NVML_SUCCESS)
      continue;
    devices->push_back(device);
    uuids->push_back(uuid);
  }
  return NVML_SUCCESS;
}

bool holds(const OfferedDevices& view, nvmlDevice_t device) {
  return std::find(view.devices.begin(), view.devices.end(), device) != view.devices.end();
}

}  // namespace

nvmlReturn_t offered_devices(const NvmlTable& nvml, const std::vector<std::string>& offered,
                             OfferedDevices* out) {
  std::vector<std::string> uuids;
  *out = {};
  if (nvmlReturn_t rc = listed(nvml, &out->devices, &uuids); rc != NVML_SUCCESS) return rc;
  if (offered.empty()) return NVML_SUCCESS;
  std::vector<nvmlDevice_t> shown;
  for (const std::string& uuid : offered) {
    auto it = std::find_if(uuids.begin(), uuids.end(), [&](const std::string& listed) {
      return strcasecmp(listed.c_str(), uuid.c_str()) == 0;
    });
    if (it == uuids.end()) return NVML_SUCCESS;
    shown.push_back(out->devices[static_cast<size_t>(it - uuids.begin())]);
  }
  out->devices = std::move(shown);
  out->all = false;
  return NVML_SUCCESS;
}

nvmlReturn_t session_view(Session& s, const NvmlTable** nvml, OfferedDevices* view) {
  *nvml = session_nvml();
  if (!*nvml) return NVML_ERROR_LIBRARY_NOT_FOUND;
  return offered_devices(**nvml, s.offered_gpus(), view);
}

bool offered(Session& s, nvmlDevice_t device) {
  const NvmlTable* nvml = nullptr;
  OfferedDevices view;
  if (session_view(s, &nvml, &view) != NVML_SUCCESS || view.all || holds(view, device)) return true;
  // A MIG instance's handle is not in the list: its parent's decides.
  nvmlDevice_t parent{};
  return nvml->nvmlDeviceGetDeviceHandleFromMigDeviceHandle &&
         nvml->nvmlDeviceGetDeviceHandleFromMigDeviceHandle(device, &parent) == NVML_SUCCESS &&
         holds(view, parent);
}

}  // namespace scuda::server
