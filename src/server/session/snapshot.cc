#include "server/session/snapshot.h"

#include <fmt/format.h>

namespace scuda::server {

namespace {

std::string error_text(const DriverTable& d, CUresult rc) {
  const char* name = nullptr;
  if (d.cuGetErrorName) d.cuGetErrorName(rc, &name);
  return name ? name : fmt::format("error {}", static_cast<int>(rc));
}

bool snapshot_device(const DriverTable& d, int ordinal, protocol::DeviceInfo* info) {
  CUdevice dev = 0;
  char text[256] = {};
  size_t total = 0;
  if (d.cuDeviceGet(&dev, ordinal) != CUDA_SUCCESS ||
      d.cuDeviceGetName(text, sizeof text, dev) != CUDA_SUCCESS ||
      d.cuDeviceGetUuid_v2(&info->uuid, dev) != CUDA_SUCCESS ||
      d.cuDeviceTotalMem_v2(&total, dev) != CUDA_SUCCESS)
    return false;
  info->name = text;
  info->total_mem = total;
  if (d.cuDeviceGetPCIBusId(text, sizeof text, dev) == CUDA_SUCCESS) info->pci_bus_id = text;
  info->attrs.assign(CU_DEVICE_ATTRIBUTE_MAX, 0);
  info->attr_ok.assign(CU_DEVICE_ATTRIBUTE_MAX, 0);
  for (int a = 0; a < CU_DEVICE_ATTRIBUTE_MAX; ++a) {
    int value = 0;
    if (d.cuDeviceGetAttribute(&value, static_cast<CUdevice_attribute>(a), dev) == CUDA_SUCCESS) {
      info->attrs[a] = value;
      info->attr_ok[a] = 1;
    }
  }
  return true;
}

}  // namespace

bool take_snapshot(const DriverTable& d, protocol::Welcome* w, std::string* error) {
  if (!d.cuInit || !d.cuDriverGetVersion || !d.cuDeviceGetCount || !d.cuDeviceGet ||
      !d.cuDeviceGetName || !d.cuDeviceGetUuid_v2 || !d.cuDeviceTotalMem_v2 ||
      !d.cuDeviceGetPCIBusId || !d.cuDeviceGetAttribute) {
    *error = fmt::format("{} is not a CUDA driver: it lacks cuInit or the device queries", d.path);
    return false;
  }
  if (CUresult rc = d.cuInit(0); rc != CUDA_SUCCESS) {
    *error = fmt::format("cuInit failed on the GPU host: {}", error_text(d, rc));
    return false;
  }
  int count = 0;
  d.cuDriverGetVersion(&w->driver_version);
  if (CUresult rc = d.cuDeviceGetCount(&count); rc != CUDA_SUCCESS) {
    *error = fmt::format("cuDeviceGetCount failed on the GPU host: {}", error_text(d, rc));
    return false;
  }
  w->devices.resize(count);
  for (int i = 0; i < count; ++i) {
    if (!snapshot_device(d, i, &w->devices[i])) {
      *error = fmt::format("could not read device {} on the GPU host", i);
      return false;
    }
  }
  return true;
}

}  // namespace scuda::server
