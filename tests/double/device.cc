// Initialisation and the single fake device (ordinal 0).
#include <cuda.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include "state.h"

using namespace scuda_double;

namespace {

constexpr const char* kName = "scuda test double";
constexpr const char* kPciBusId = "0000:42:00.0";
constexpr char kUuid[16] = {'s', 'c', 'u', 'd', 'a', '-', 't', 'e',
                            's', 't', '-', 'd', 'b', 'l', '0', '1'};

CUresult copy_string(const char* text, char* out, int len) {
  if (out == nullptr || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  size_t n = std::min(std::strlen(text), static_cast<size_t>(len) - 1);
  std::memcpy(out, text, n);
  out[n] = '\0';
  return CUDA_SUCCESS;
}

Call begin_device(CUdevice dev) {
  Call call = begin();
  if (call.status == CUDA_SUCCESS && !valid_device(dev)) call.status = CUDA_ERROR_INVALID_DEVICE;
  return call;
}

void create_primary_context() {
  auto primary = std::make_unique<Context>();
  primary->primary = true;
  state().primary = state().contexts.add(std::move(primary));
}

}  // namespace

extern "C" {

CUresult cuInit(unsigned int Flags) {
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard<std::mutex> lock(state().mu);
  if (!state().initialized) create_primary_context();
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
  *count = 1;
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
  std::memcpy(uuid->bytes, kUuid, sizeof(kUuid));
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
  return copy_string(kPciBusId, pciBusId, len);
}

}  // extern "C"
