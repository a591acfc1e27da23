// The GPUs a session's NVML shows: those its server offers (the server's
// CUDA_VISIBLE_DEVICES), in the server's order, so that NVML's index i is
// CUDA's device i, as on a host holding only those GPUs. NVML itself lists
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

// NVML's devices as the session shows them. `all`: the server offers every
// GPU NVML lists, or offers one NVML does not list (a MIG instance, say),
// and then NVML's own list and order stand.
struct OfferedDevices {
  std::vector<nvmlDevice_t> devices;
  bool all = true;
};

// Matches NVML's devices against `offered` (UUID text, any case); fails as
// NVML fails.
nvmlReturn_t offered_devices(const NvmlTable& nvml, const std::vector<std::string>& offered,
                             OfferedDevices* out);

// Whether `device` (an NVML device handle, or a MIG instance's) is one the
// session shows; true when NVML cannot tell.
bool offered(Session& s, nvmlDevice_t device);

}  // namespace scuda::server
