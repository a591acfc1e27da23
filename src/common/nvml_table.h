// A table of every NVML entry point in nvml.h, bound with dlsym to NVIDIA's
// libnvidia-ml.so.1: the server session's NVML, and the client's local one in
// pass-through mode.
#pragma once

#include <nvml.h>

#include <string>

namespace scuda {

struct NvmlTable {
#define SCUDA_NVML_FN(name, params, args) nvmlReturn_t(*name) params = nullptr;
#include "nvml_api.inc"
#undef SCUDA_NVML_FN
  const char* (*nvmlErrorString)(nvmlReturn_t) = nullptr;
  nvmlReturn_t (*nvmlInternalGetExportTable)(const void** table, const void* id) = nullptr;
  void* handle = nullptr;
  std::string path;
};

// Opens NVIDIA's NVML and binds every entry point it has (missing ones stay
// null). `path` empty means: search the usual places, skipping scuda's
// stand-in. Returns false and says why on failure.
bool load_nvml(const std::string& path, NvmlTable* table, std::string* error);

}  // namespace scuda
