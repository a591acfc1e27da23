// Initialisation and the fake devices (SCUDA_DOUBLE_DEVICES of them, one by
// default), alike but for their UUID and PCI address.
#include <cuda.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>

#include "state.h"

using namespace scuda_double;

namespace {

constexpr const char* kName = "scuda test double";

CUresult copy_string(const char* text, char* out, int len) {
  if (out == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  size_t n = std::min(std::strlen(text), static_cast<size_t>(len) - 1);
  std::memcpy(out, text, n);
  out[n] = '\0';
  return CUDA_SUCCESS;
}

std::string pci_bus_id(CUdevice dev) {
  char id[16];
  std::snprintf(id, sizeof id, "0000:%02x:00.0", pci_bus(dev));
  return id;
}

Call begin_device(CUdevice dev) {
  Call call = begin();
  if (call.status == CUDA_SUCCESS && !valid_device(dev)) call.status = CUDA_ERROR_INVALID_DEVICE;
  return call;
}

void create_primary_contexts() {
  for (CUdevice dev = 0; dev < device_count(); ++dev) {
    auto primary = std::make_unique<Context>();
    primary->primary = true;
    primary->device = dev;
    state().primary[dev] = state().contexts.add(std::move(primary));
  }
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned int Flags) {
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (device_count() == 0) return CUDA_ERROR_NO_DEVICE;
  std::lock_guard<std::mutex> lock(state().mu);
  if (!state().initialized) create_primary_contexts();
  state().initialized = true;
  return CUDA_SUCCESS;
}

// Works before cuInit, as the real driver's does.
CUresult cuDriverGetVersion(int* driverVersion) {
  if (driverVersion == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *driverVersion = 13000;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int* count) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *count = device_count();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice dev) {
  Call call = begin_device(dev);
  if (call.status != CUDA_SUCCESS) return call.status;
  return copy_string(kName, name, len);
}

CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  Call call = begin_device(dev);
  if (call.status != CUDA_SUCCESS) return call.status;
  if (uuid == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *uuid = device_uuid(physical_device(dev));
  return CUDA_SUCCESS;
}

// LUIDs exist only on Windows; the real Linux driver reports NOT_SUPPORTED.
CUresult cuDeviceGetLuid(char* luid, unsigned int* deviceNodeMask, CUdevice dev) {
  Call call = begin_device(dev);
  if (call.status != CUDA_SUCCESS) return call.status;
  if (luid == nullptr || deviceNodeMask == nullptr) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  Call call = begin_device(dev);
  if (call.status != CUDA_SUCCESS) return call.status;
  if (bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *bytes = total_memory();
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetPCIBusId(char* pciBusId, int len, CUdevice dev) {
  Call call = begin_device(dev);
  if (call.status != CUDA_SUCCESS) return call.status;
  return copy_string(pci_bus_id(dev).c_str(), pciBusId, len);
}

}  // extern "C"
