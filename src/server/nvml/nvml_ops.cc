// Hand-written NVML handlers: the process lists, which show a client only its
// own session process (the one using the GPU on its behalf), never the GPU's
// other tenants.
#include <unistd.h>

#include <nvml.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "nvml_ops.h"
#include "nvml_server_gen.h"
#include "server/nvml/nvml_session.h"
#include "server/session/dispatch.h"

namespace scuda::server {

namespace {

using gen::to_cu;
using protocol::Reader;
using protocol::Writer;

template <class Info>
using ListFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, Info*);

// Every process on the device, asking again while the list grows.
template <class Info>
nvmlReturn_t list_all(ListFn<Info> fn, nvmlDevice_t device, std::vector<Info>* all) {
  unsigned int capacity = 64;
  for (int attempt = 0; attempt < 4; ++attempt) {
    all->resize(capacity);
    unsigned int n = capacity;
    nvmlReturn_t rc = fn(device, &n, all->data());
    if (rc == NVML_SUCCESS) all->resize(n);
    if (rc != NVML_ERROR_INSUFFICIENT_SIZE) return rc;
    capacity = n + 16;
  }
  return NVML_ERROR_UNKNOWN;
}

template <class Info>
std::vector<Info> own_entries(const std::vector<Info>& all) {
  std::vector<Info> own;
  const auto pid = static_cast<unsigned int>(getpid());
  for (const Info& info : all)
    if (info.pid == pid) own.push_back(info);
  return own;
}

// Request and reply as the generated stub sends them: device id, inout
// count, out buffer of count entries.
template <class Info, ListFn<Info> NvmlTable::*Fn>
CUresult own_processes(Session& s, Reader& in, Writer& out) {
  uint64_t device_id = in.u64();
  auto count = gen::get_inout<unsigned int>(in);
  auto infos = gen::get_out_buf(in);
  if (!in.done() || !infos.allocate()) return kMalformed;
  nvmlDevice_t device;
  if (!gen::resolve(s, device_id, HandleKind::nvmlDevice_t, &device) || !count.present)
    return to_cu(NVML_ERROR_INVALID_ARGUMENT);
  const NvmlTable* nvml = session_nvml();
  if (!nvml) return to_cu(NVML_ERROR_LIBRARY_NOT_FOUND);
  if (!(nvml->*Fn)) return to_cu(NVML_ERROR_FUNCTION_NOT_FOUND);
  std::vector<Info> all;
  if (nvmlReturn_t rc = list_all(nvml->*Fn, device, &all); rc != NVML_SUCCESS) return to_cu(rc);
  const std::vector<Info> own = own_entries(all);
  const size_t room = infos.present ? std::min<size_t>(count.value, infos.size / sizeof(Info)) : 0;
  count.value = static_cast<unsigned int>(own.size());
  gen::put_inout(out, count);
  if (own.size() > room) return to_cu(NVML_ERROR_INSUFFICIENT_SIZE);
  if (!own.empty()) std::memcpy(infos.ptr(), own.data(), own.size() * sizeof(Info));
  gen::put_out_buf(out, infos);
  return CUDA_SUCCESS;
}

#define SCUDA_OWN_PROCESSES(name, info) \
  { protocol::kOp_##name, own_processes<info, &NvmlTable::name> }

const HandlerEntry kNvmlHandlers[] = {
    SCUDA_OWN_PROCESSES(nvmlDeviceGetComputeRunningProcesses, nvmlProcessInfo_v1_t),
    SCUDA_OWN_PROCESSES(nvmlDeviceGetComputeRunningProcesses_v2, nvmlProcessInfo_v2_t),
    SCUDA_OWN_PROCESSES(nvmlDeviceGetComputeRunningProcesses_v3, nvmlProcessInfo_t),
    SCUDA_OWN_PROCESSES(nvmlDeviceGetGraphicsRunningProcesses, nvmlProcessInfo_v1_t),
    SCUDA_OWN_PROCESSES(nvmlDeviceGetGraphicsRunningProcesses_v2, nvmlProcessInfo_v2_t),
    SCUDA_OWN_PROCESSES(nvmlDeviceGetGraphicsRunningProcesses_v3, nvmlProcessInfo_t),
    SCUDA_OWN_PROCESSES(nvmlDeviceGetMPSComputeRunningProcesses, nvmlProcessInfo_v1_t),
    SCUDA_OWN_PROCESSES(nvmlDeviceGetMPSComputeRunningProcesses_v2, nvmlProcessInfo_v2_t),
    SCUDA_OWN_PROCESSES(nvmlDeviceGetMPSComputeRunningProcesses_v3, nvmlProcessInfo_t),
};

}  // namespace

std::span<const HandlerEntry> nvml_handlers() { return kNvmlHandlers; }

}  // namespace scuda::server
