// The session process's NVML: loaded on the first NVML request, so the
// accepting process and sessions that never ask for NVML never load it.
#pragma once

#include <string>

#include "common/nvml_table.h"

namespace scuda::server {

// Where to load NVML from (`scuda server --nvml`); empty: the usual places.
// Set before sessions are forked.
void set_nvml_path(std::string path);

// NVIDIA's NVML in this session process, or nullptr when it cannot be loaded
// (logged once).
const NvmlTable* session_nvml();

}  // namespace scuda::server
