// The entry points that number or find devices, or say a device's number.
// With several servers the program's list of devices runs through the first
// server's, then the next server's, as the driver stand-in's does
// (client/pools/servers.h); each asks the servers in turn through the
// generated one-server stubs, and the handles it returns carry their server
// (runtime.h), so that every later call naming one goes there.
#include <nvml.h>

#include "nvml/runtime.h"
#include "nvml_one_server.h"

namespace one = scuda::nvml::one_server;
using scuda::nvml::OnServer;

namespace {

using scuda::nvml::server_count;

// The devices of servers [0, end), added up into *total.
template <class Count>
nvmlReturn_t devices_before(uint32_t end, Count one_count, unsigned int* total) {
  for (uint32_t s = 0; s < end; ++s) {
    const OnServer on(s);
    unsigned int here = 0;
    if (nvmlReturn_t rc = one_count(&here); rc != NVML_SUCCESS) return rc;
    *total += here;
  }
  return NVML_SUCCESS;
}

// The devices of every server, added up.
template <class Count>
nvmlReturn_t count_across(Count one_count, unsigned int* count) {
  if (!count) return one_count(count);
  unsigned int total = 0;
  if (nvmlReturn_t rc = devices_before(server_count(), one_count, &total); rc != NVML_SUCCESS)
    return rc;
  *count = total;
  return NVML_SUCCESS;
}

// Device `index` of the list: the server whose devices hold it, and its
// number there.
template <class Count, class ByIndex>
nvmlReturn_t by_index(Count one_count, ByIndex one_by_index, unsigned int index,
                      nvmlDevice_t* device) {
  for (uint32_t s = 0, n = server_count(); s < n; ++s) {
    const OnServer on(s);
    unsigned int here = 0;
    if (nvmlReturn_t rc = one_count(&here); rc != NVML_SUCCESS) return rc;
    if (index < here) return one_by_index(index, device);
    index -= here;
  }
  return NVML_ERROR_INVALID_ARGUMENT;
}

// A device's number in the list: its number on its server, after every
// earlier server's devices.
nvmlReturn_t index_across(nvmlDevice_t device, unsigned int* index) {
  if (nvmlReturn_t rc = one::nvmlDeviceGetIndex(device, index); rc != NVML_SUCCESS) return rc;
  const uint32_t home = scuda::nvml::server_of(scuda::nvml::handle_id(device));
  return devices_before(home, one::nvmlDeviceGetCount_v2, index);
}

// The first server that knows the device `find` names, passing over
// servers that are gone; NVML_ERROR_NOT_FOUND when none does. A device
// two servers both report (the same PCI bus id on two hosts) is the first
// server's.
template <class Find>
nvmlReturn_t first_found(Find find) {
  nvmlReturn_t rc = NVML_ERROR_NOT_FOUND;
  bool any_not_found = false;
  const uint32_t n = server_count();
  for (uint32_t s = 0; s < n; ++s) {
    const OnServer on(s);
    rc = find();
    if (rc == NVML_ERROR_NOT_FOUND) any_not_found = true;
    else if (rc != NVML_ERROR_GPU_IS_LOST || n == 1) return rc;
  }
  return any_not_found ? NVML_ERROR_NOT_FOUND : rc;
}

}  // namespace

extern "C" nvmlReturn_t DECLDIR nvmlDeviceGetCount(unsigned int* deviceCount) {
  SCUDA_NVML_PASSTHROUGH(nvmlDeviceGetCount, deviceCount);
  return count_across(one::nvmlDeviceGetCount, deviceCount);
}

extern "C" nvmlReturn_t DECLDIR nvmlDeviceGetCount_v2(unsigned int* deviceCount) {
  SCUDA_NVML_PASSTHROUGH(nvmlDeviceGetCount_v2, deviceCount);
  return count_across(one::nvmlDeviceGetCount_v2, deviceCount);
}

extern "C" nvmlReturn_t DECLDIR nvmlDeviceGetHandleByIndex(unsigned int index,
                                                           nvmlDevice_t* device) {
  SCUDA_NVML_PASSTHROUGH(nvmlDeviceGetHandleByIndex, index, device);
  return by_index(one::nvmlDeviceGetCount, one::nvmlDeviceGetHandleByIndex, index, device);
}

extern "C" nvmlReturn_t DECLDIR nvmlDeviceGetHandleByIndex_v2(unsigned int index,
                                                              nvmlDevice_t* device) {
  SCUDA_NVML_PASSTHROUGH(nvmlDeviceGetHandleByIndex_v2, index, device);
  return by_index(one::nvmlDeviceGetCount_v2, one::nvmlDeviceGetHandleByIndex_v2, index, device);
}

extern "C" nvmlReturn_t DECLDIR nvmlDeviceGetHandleByPciBusId(const char* pciBusId,
                                                              nvmlDevice_t* device) {
  SCUDA_NVML_PASSTHROUGH(nvmlDeviceGetHandleByPciBusId, pciBusId, device);
  return first_found([&] { return one::nvmlDeviceGetHandleByPciBusId(pciBusId, device); });
}

extern "C" nvmlReturn_t DECLDIR nvmlDeviceGetHandleByPciBusId_v2(const char* pciBusId,
                                                                 nvmlDevice_t* device) {
  SCUDA_NVML_PASSTHROUGH(nvmlDeviceGetHandleByPciBusId_v2, pciBusId, device);
  return first_found([&] { return one::nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device); });
}

extern "C" nvmlReturn_t DECLDIR nvmlDeviceGetHandleBySerial(const char* serial,
                                                            nvmlDevice_t* device) {
  SCUDA_NVML_PASSTHROUGH(nvmlDeviceGetHandleBySerial, serial, device);
  return first_found([&] { return one::nvmlDeviceGetHandleBySerial(serial, device); });
}

extern "C" nvmlReturn_t DECLDIR nvmlDeviceGetHandleByUUID(const char* uuid, nvmlDevice_t* device) {
  SCUDA_NVML_PASSTHROUGH(nvmlDeviceGetHandleByUUID, uuid, device);
  return first_found([&] { return one::nvmlDeviceGetHandleByUUID(uuid, device); });
}

extern "C" nvmlReturn_t DECLDIR nvmlDeviceGetHandleByUUIDV(const nvmlUUID_t* uuid,
                                                           nvmlDevice_t* device) {
  SCUDA_NVML_PASSTHROUGH(nvmlDeviceGetHandleByUUIDV, uuid, device);
  return first_found([&] { return one::nvmlDeviceGetHandleByUUIDV(uuid, device); });
}

extern "C" nvmlReturn_t DECLDIR nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int* index) {
  SCUDA_NVML_PASSTHROUGH(nvmlDeviceGetIndex, device, index);
  return index_across(device, index);
}
