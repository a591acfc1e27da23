#include "common/driver_table.h"

#include <dlfcn.h>

#include <fmt/format.h>

#include "common/real_library.h"

namespace scuda {

namespace {

// Where NVIDIA's driver lives on the systems we know, most specific first.
const char* const kDriverCandidates[] = {
    "/usr/local/nvidia/lib64/libcuda.so.1",
    "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
    "/lib/x86_64-linux-gnu/libcuda.so.1",
    "/usr/lib64/libcuda.so.1",
    "/usr/lib/aarch64-linux-gnu/libcuda.so.1",
    "/usr/lib/libcuda.so.1",
    "/lib/libcuda.so.1",
    "libcuda.so.1",
};

void bind_all(void* h, DriverTable* t) {
#define SCUDA_DRIVER_FN(name, params, args) \
  t->name = reinterpret_cast<decltype(t->name)>(dlsym(h, #name));
#include "driver_api.inc"
#undef SCUDA_DRIVER_FN
}

}  // namespace

bool load_driver(const std::string& path, DriverTable* table, std::string* error) {
  std::string tried;
  void* h = open_real_library(path, kDriverCandidates, &table->path, &tried);
  if (!h) {
    *error = fmt::format("no CUDA driver could be loaded; tried: {}", tried);
    return false;
  }
  table->handle = h;
  bind_all(h, table);
  return true;
}

}  // namespace scuda
