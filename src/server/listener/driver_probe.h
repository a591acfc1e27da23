// The server's check at start that its driver works: in a child process, so
// that the listener itself never initialises CUDA (its sessions fork from
// it).
#pragma once

#include <string>
#include <vector>

namespace scuda::server {

// Loads the driver at `path` (empty: the usual places), initialises it and
// lists its GPUs, in a child process. True with *summary ("driver PATH,
// CUDA 13.0; 1 GPU: 0 NAME (79.2 GiB)") and *gpus (their UUIDs, "GPU-...",
// in the driver's order) when that works; else false and *error says why.
bool probe_driver(const std::string& path, std::string* summary, std::vector<std::string>* gpus,
                  std::string* error);

}  // namespace scuda::server
