#include "common/nvml_table.h"

#include <dlfcn.h>

#include <fmt/format.h>

#include "common/real_library.h"

namespace scuda {

namespace {

// Beside the driver, on the systems we know (common/driver_table.cc).
const char* const kNvmlCandidates[] = {
    "/usr/local/nvidia/lib64/libnvidia-ml.so.1",
    "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
    "/lib/x86_64-linux-gnu/libnvidia-ml.so.1",
    "/usr/lib64/libnvidia-ml.so.1",
    "/usr/lib/aarch64-linux-gnu/libnvidia-ml.so.1",
    "/usr/lib/libnvidia-ml.so.1",
    "/lib/libnvidia-ml.so.1",
    "libnvidia-ml.so.1",
};

template <class F>
void bind(void* h, const char* name, F* fn) {
  *fn = reinterpret_cast<F>(dlsym(h, name));
}

}  // namespace

bool load_nvml(const std::string& path, NvmlTable* table, std::string* error) {
  std::string tried;
  void* h = open_real_library(path, kNvmlCandidates, &table->path, &tried);
  if (!h) {
    *error = fmt::format("no NVML could be loaded; tried: {}", tried);
    return false;
  }
  table->handle = h;
#define SCUDA_NVML_FN(name, params, args) bind(h, #name, &table->name);
#include "nvml_api.inc"
#undef SCUDA_NVML_FN
  bind(h, "nvmlErrorString", &table->nvmlErrorString);
  bind(h, "nvmlInternalGetExportTable", &table->nvmlInternalGetExportTable);
  return true;
}

}  // namespace scuda
