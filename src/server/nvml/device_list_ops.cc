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

// nvmlDeviceGetCount and _v2 (the inout count): how many GPUs the server
// offers. The legacy call counts as _v2 does: the offered GPUs are the
// session's to use.
CUresult device_count(Session& s, Reader& in, Writer& out) {
  auto count = gen::get_inout<unsigned int>(in);
  if (!in.done()) return kMalformed;
  if (!count.present) return to_cu(NVML_ERROR_INVALID_ARGUMENT);
  const NvmlTable* nvml = nullptr;
  OfferedDevices view;
  if (nvmlReturn_t rc = session_view(s, &nvml, &view); rc != NVML_SUCCESS) return to_cu(rc);
  count.value = static_cast<unsigned int>(view.devices.size());
  gen::put_inout(out, count);
  return CUDA_SUCCESS;
}

// nvmlDeviceGetHandleByIndex and _v2 (the index, the handle's proposed id):
// the offered GPU at that index.
CUresult handle_by_index(Session& s, Reader& in, Writer& out) {
  const auto index = in.get<unsigned int>();
  auto device = gen::get_out_handle<nvmlDevice_t>(in);
  if (!in.done()) return kMalformed;
  if (!device.present || !gen::can_bind(s, device)) return to_cu(NVML_ERROR_INVALID_ARGUMENT);
  const NvmlTable* nvml = nullptr;
  OfferedDevices view;
  if (nvmlReturn_t rc = session_view(s, &nvml, &view); rc != NVML_SUCCESS) return to_cu(rc);
  if (index >= view.devices.size()) return to_cu(NVML_ERROR_INVALID_ARGUMENT);
  device.value = view.devices[index];
  gen::put_out_handle(s, out, device, HandleKind::nvmlDevice_t);
  return CUDA_SUCCESS;
}

// `device`'s index among the offered GPUs; NVML's own for a device not in
// the list (a MIG instance's handle) or when NVML's list stands.
nvmlReturn_t index_in(const OfferedDevices& view, const NvmlTable& nvml, nvmlDevice_t device,
                      unsigned int* index) {
  auto it = std::find(view.devices.begin(), view.devices.end(), device);
  if (view.all || it == view.devices.end()) {
    if (!nvml.nvmlDeviceGetIndex) return NVML_ERROR_FUNCTION_NOT_FOUND;
    return nvml.nvmlDeviceGetIndex(device, index);
  }
  *index = static_cast<unsigned int>(it - view.devices.begin());
  return NVML_SUCCESS;
}

// nvmlDeviceGetIndex (the device's id, the inout index).
CUresult device_index(Session& s, Reader& in, Writer& out) {
  const uint64_t id = in.u64();
  auto index = gen::get_inout<unsigned int>(in);
  if (!in.done()) return kMalformed;
  nvmlDevice_t device{};
  if (!gen::resolve(s, id, HandleKind::nvmlDevice_t, &device) || !index.present)
    return to_cu(NVML_ERROR_INVALID_ARGUMENT);
  const NvmlTable* nvml = nullptr;
  OfferedDevices view;
  if (nvmlReturn_t rc = session_view(s, &nvml, &view); rc != NVML_SUCCESS) return to_cu(rc);
  if (nvmlReturn_t rc = index_in(view, *nvml, device, &index.value); rc != NVML_SUCCESS)
    return to_cu(rc);
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
