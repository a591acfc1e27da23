// Device queries, answered from the snapshot the server sent at connect.
#include <cstring>

#include <spdlog/spdlog.h>

#include "client/contexts/context.h"
#include "client/runtime.h"
#include "client/transport/session.h"
#include "custom.h"

namespace {

using scuda::client::snapshot;
using scuda::client::valid_device;

const scuda::protocol::DeviceInfo& info(CUdevice dev) { return snapshot().devices[dev]; }

CUresult copy_text(const std::string& text, char* out, int len) {
  if (!out || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  const size_t n = std::min(text.size(), static_cast<size_t>(len - 1));
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
  return CUDA_SUCCESS;
}

#define SCUDA_REQUIRE_DEVICE(dev)                                        \
  do {                                                                   \
    if (!scuda::client::connection()) return CUDA_ERROR_NOT_INITIALIZED; \
    if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;            \
  } while (0)

}  // namespace

CUresult scuda::client::custom::cuDeviceGetCount(int* count) {
  if (!scuda::client::connection()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = static_cast<int>(snapshot().devices.size());
  return CUDA_SUCCESS;
}

CUresult scuda::client::custom::cuDeviceGet(CUdevice* device, int ordinal) {
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  SCUDA_REQUIRE_DEVICE(ordinal);
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult scuda::client::custom::cuDeviceGetName(char* name, int len, CUdevice dev) {
  SCUDA_REQUIRE_DEVICE(dev);
  return copy_text(info(dev).name, name, len);
}

CUresult scuda::client::custom::cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice dev) {
  SCUDA_REQUIRE_DEVICE(dev);
  if (!uuid) return CUDA_ERROR_INVALID_VALUE;
  *uuid = info(dev).uuid;
  return CUDA_SUCCESS;
}

extern "C" CUresult CUDAAPI cuDeviceGetLuid(char*, unsigned int*, CUdevice dev) {
  SCUDA_REQUIRE_DEVICE(dev);
  return CUDA_ERROR_NOT_SUPPORTED;  // LUIDs exist only on Windows
}

CUresult scuda::client::custom::cuDeviceTotalMem_v2(size_t* bytes, CUdevice dev) {
  SCUDA_REQUIRE_DEVICE(dev);
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  *bytes = info(dev).total_mem;
  return CUDA_SUCCESS;
}

CUresult scuda::client::custom::cuDeviceGetAttribute(int* value, CUdevice_attribute attr,
                                                     CUdevice dev) {
  SCUDA_REQUIRE_DEVICE(dev);
  const auto& d = info(dev);
  const auto i = static_cast<size_t>(attr);
  if (!value || i >= d.attrs.size() || !d.attr_ok[i]) {
    spdlog::debug("cuDeviceGetAttribute({}): the server's driver has no such attribute", i);
    return CUDA_ERROR_INVALID_VALUE;
  }
  *value = d.attrs[i];
  return CUDA_SUCCESS;
}

CUresult scuda::client::custom::cuDeviceGetPCIBusId(char* id, int len, CUdevice dev) {
  SCUDA_REQUIRE_DEVICE(dev);
  return copy_text(info(dev).pci_bus_id, id, len);
}

CUresult scuda::client::custom::cuDeviceGetByPCIBusId(CUdevice* dev, const char* id) {
  if (!scuda::client::connection()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!dev || !id) return CUDA_ERROR_INVALID_VALUE;
  const auto& devices = snapshot().devices;
  for (size_t i = 0; i < devices.size(); ++i) {
    if (strcasecmp(devices[i].pci_bus_id.c_str(), id) == 0) {
      *dev = static_cast<CUdevice>(i);
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_DEVICE;
}

CUresult scuda::client::custom::cuDeviceComputeCapability(int* major, int* minor, CUdevice dev) {
  SCUDA_REQUIRE_DEVICE(dev);
  if (!major || !minor) return CUDA_ERROR_INVALID_VALUE;
  // Through the checked lookup: the server's snapshot may hold fewer attributes.
  if (CUresult rc =
          custom::cuDeviceGetAttribute(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev);
      rc != CUDA_SUCCESS)
    return rc;
  return custom::cuDeviceGetAttribute(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev);
}

CUresult scuda::client::custom::cuDeviceGetProperties(CUdevprop* prop, CUdevice dev) {
  SCUDA_REQUIRE_DEVICE(dev);
  if (!prop) return CUDA_ERROR_INVALID_VALUE;
  const auto& a = info(dev).attrs;
  prop->maxThreadsPerBlock = a[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
  prop->maxThreadsDim[0] = a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X];
  prop->maxThreadsDim[1] = a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y];
  prop->maxThreadsDim[2] = a[CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z];
  prop->maxGridSize[0] = a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X];
  prop->maxGridSize[1] = a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y];
  prop->maxGridSize[2] = a[CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z];
  prop->sharedMemPerBlock = a[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK];
  prop->totalConstantMemory = a[CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY];
  prop->SIMDWidth = a[CU_DEVICE_ATTRIBUTE_WARP_SIZE];
  prop->memPitch = a[CU_DEVICE_ATTRIBUTE_MAX_PITCH];
  prop->regsPerBlock = a[CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK];
  prop->clockRate = a[CU_DEVICE_ATTRIBUTE_CLOCK_RATE];
  prop->textureAlign = a[CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT];
  return CUDA_SUCCESS;
}
