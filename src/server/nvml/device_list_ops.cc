// Hand-written NVML handlers that number devices: the count, a device by
// index and a device's index, over the GPUs the server offers
// (offered_devices.h) rather than every GPU of the host.
#include <nvml.h>

#include <algorithm>

#include "nvml_ops.h"
#include "nvml_server_gen.h"
#include "server/nvml/nvml_session.h"
#include "server/nvml/offered_devices.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"

namespace scuda::server {

namespace {

using gen::to_cu;
using protocol::Reader;
using protocol::Writer;

// The session's view of NVML's devices, or NVML's error.
nvmlReturn_t view_of(Session& s, OfferedDevices* view) {
  const NvmlTable* nvml = session_nvml();
  if (!nvml) return NVML_ERROR_LIBRARY_NOT_FOUND;
  return offered_devices(*nvml, s.offered_gpus(), view);
}

// nvmlDeviceGetCount and _v2: the device id-less inout count.
CUresult device_count(Session& s, Reader& in, Writer& out) {
  auto count = gen::get_inout<unsigned int>(in);
  if (!in.done()) return kMalformed;
  if (!count.present) return to_cu(NVML_ERROR_INVALID_ARGUMENT);
  OfferedDevices view;
  if (nvmlReturn_t rc = view_of(s, &view); rc != NVML_SUCCESS) return to_cu(rc);
  count.value = static_cast<unsigned int>(view.devices.size());
  gen::put_inout(out, count);
  return CUDA_SUCCESS;
}

// nvmlDeviceGetHandleByIndex and _v2: the index, the handle's proposed id.
CUresult handle_by_index(Session& s, Reader& in, Writer& out) {
  const auto index = in.get<unsigned int>();
  auto device = gen::get_out_handle<nvmlDevice_t>(in);
  if (!in.done()) return kMalformed;
  if (!device.present || !gen::can_bind(s, device)) return to_cu(NVML_ERROR_INVALID_ARGUMENT);
  OfferedDevices view;
  if (nvmlReturn_t rc = view_of(s, &view); rc != NVML_SUCCESS) return to_cu(rc);
  if (index >= view.devices.size()) return to_cu(NVML_ERROR_INVALID_ARGUMENT);
  device.value = view.devices[index];
  gen::put_out_handle(s, out, device, HandleKind::nvmlDevice_t);
  return CUDA_SUCCESS;
}

// nvmlDeviceGetIndex: the device's id, the inout index.
CUresult device_index(Session& s, Reader& in, Writer& out) {
  const uint64_t id = in.u64();
  auto index = gen::get_inout<unsigned int>(in);
  if (!in.done()) return kMalformed;
  nvmlDevice_t device{};
  if (!gen::resolve(s, id, HandleKind::nvmlDevice_t, &device) || !index.present)
    return to_cu(NVML_ERROR_INVALID_ARGUMENT);
  OfferedDevices view;
  if (nvmlReturn_t rc = view_of(s, &view); rc != NVML_SUCCESS) return to_cu(rc);
  const NvmlTable* nvml = session_nvml();
  if (view.all) {  // NVML's own numbering, MIG instances' included
    if (!nvml->nvmlDeviceGetIndex) return to_cu(NVML_ERROR_FUNCTION_NOT_FOUND);
    if (nvmlReturn_t rc = nvml->nvmlDeviceGetIndex(device, &index.value); rc != NVML_SUCCESS)
      return to_cu(rc);
  } else {
    auto it = std::find(view.devices.begin(), view.devices.end(), device);
    if (it == view.devices.end()) return to_cu(NVML_ERROR_INVALID_ARGUMENT);
    index.value = static_cast<unsigned int>(it - view.devices.begin());
  }
  gen::put_inout(out, index);
  return CUDA_SUCCESS;
}

const HandlerEntry kDeviceListHandlers[] = {
    {protocol::kOp_nvmlDeviceGetCount, device_count},
    {protocol::kOp_nvmlDeviceGetCount_v2, device_count},
    {protocol::kOp_nvmlDeviceGetHandleByIndex, handle_by_index},
    {protocol::kOp_nvmlDeviceGetHandleByIndex_v2, handle_by_index},
    {protocol::kOp_nvmlDeviceGetIndex, device_index},
};

}  // namespace

std::span<const HandlerEntry> nvml_device_list_handlers() { return kDeviceListHandlers; }

}  // namespace scuda::server
