// A client's CUDA_VISIBLE_DEVICES, applied by its session: the client's
// list names GPUs among those the server offers (its own
// CUDA_VISIBLE_DEVICES may hide others), and the session's driver is then
// started with the chosen GPUs' UUIDs, so that ordinals, peers and memory
// follow the client's list as they would on a local driver.
#pragma once

#include <string>
#include <vector>

namespace scuda::server {

// The GPUs `client_list` picks out of `offered` (their UUIDs, in the
// server's order), read as the driver reads CUDA_VISIBLE_DEVICES: indices
// into `offered` or "GPU-" UUID prefixes naming one GPU, separated by
// commas, up to the first entry that names none, names more than one, or
// repeats one. The result is the value for the session's own
// CUDA_VISIBLE_DEVICES: the chosen UUIDs, comma-separated.
std::vector<std::string> pick_visible(const std::string& client_list,
                                      const std::vector<std::string>& offered);

}  // namespace scuda::server
