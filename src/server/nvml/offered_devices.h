// The GPUs a session's NVML shows: those its server offers (the server's
// CUDA_VISIBLE_DEVICES), in the server's order, so that NVML's index i is
// the server's CUDA device i, as on a host holding only those GPUs (a
// client's own CUDA_VISIBLE_DEVICES narrows its session's CUDA devices
// further, and NVML, as natively, does not follow it). NVML itself lists
// every GPU of the host whatever CUDA_VISIBLE_DEVICES says, and a program
// such as PyTorch that counts devices with NVML would then count GPUs the
// server keeps from it.
#pragma once

#include <nvml.h>

#include <string>
#include <vector>

#include "common/nvml_table.h"

namespace scuda::server {

class Session;

// NVML's devices as the session shows them. `all`: the server did not say
// which GPUs it offers, or offers one NVML does not list (a MIG instance,
// say), and then NVML's own list and order stand.
struct OfferedDevices {
  std::vector<nvmlDevice_t> devices;
  bool all = true;
};

// Matches NVML's devices against `offered` (UUID text, any case). A device
// NVML cannot read is left out; fails as NVML fails to count.
nvmlReturn_t offered_devices(const NvmlTable& nvml, const std::vector<std::string>& offered,
                             OfferedDevices* out);

// The session's view, with its NVML in *nvml; NVML_ERROR_LIBRARY_NOT_FOUND
// when the session has none.
nvmlReturn_t session_view(Session& s, const NvmlTable** nvml, OfferedDevices* view);

// Whether `device` (an NVML device handle, or a MIG instance's) is one the
// session shows; true when NVML cannot tell.
bool offered(Session& s, nvmlDevice_t device);

}  // namespace scuda::server
