// A client's CUDA_VISIBLE_DEVICES, applied by its session: the client's
// list names GPUs among those the server offers (its own
// CUDA_VISIBLE_DEVICES may hide others), and the session's driver is then
// started with a list naming the chosen ones as the server's own list names
// them (or by index), so that ordinals, peers and memory follow the
// client's list as they would on a local driver, MIG instances included.
#pragma once

#include <string>
#include <vector>

#include "common/visible_list.h"

namespace scuda::server {

// `list` (from the network) fit for a log line: at most 200 characters,
// each outside printable ASCII shown as '?'.
std::string printable(const std::string& list);

// The session's own CUDA_VISIBLE_DEVICES for the offered GPUs `chosen`:
// their entries in `server_list` (the server's own CUDA_VISIBLE_DEVICES;
// null when it has none, and then their indices), comma-separated.
std::string session_visible(const std::vector<size_t>& chosen, const char* server_list);

}  // namespace scuda::server
