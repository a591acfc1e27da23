// A table of every driver entry point in cuda.h (and its per-thread-stream
// variants), bound with dlsym to one real driver library. The server binds it
// to the GPU host's driver; the client binds it to the local driver when no
// server is configured (pass-through).
#pragma once

#include <cuda.h>
#include <cudaProfiler.h>  // the driver exports cuProfiler* beside cuda.h's functions

#include <string>

namespace scuda {

struct DriverTable {
#define SCUDA_DRIVER_FN(name, params, args) CUresult(CUDAAPI* name) params = nullptr;
#include "driver_api.inc"
#undef SCUDA_DRIVER_FN
  void* handle = nullptr;
  std::string path;
};

// Opens the real driver and binds every entry point it has (missing ones stay
// null). `path` empty means: search the usual places, skipping any library
// that is a scuda stand-in. Returns false and says why on failure.
bool load_driver(const std::string& path, DriverTable* table, std::string* error);

}  // namespace scuda
