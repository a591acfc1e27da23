#include "common/driver_table.h"

#include <dlfcn.h>

#include <vector>

#include <fmt/format.h>

namespace scuda {

namespace {

// Where NVIDIA's driver lives on the systems we know, most specific first.
const char* const kDriverCandidates[] = {
    "/usr/local/nvidia/lib64/libcuda.so.1",  "/usr/lib/x86_64-linux-gnu/libcuda.so.1",
    "/lib/x86_64-linux-gnu/libcuda.so.1",    "/usr/lib64/libcuda.so.1",
    "/usr/lib/aarch64-linux-gnu/libcuda.so.1", "/usr/lib/libcuda.so.1",
    "/lib/libcuda.so.1",                     "libcuda.so.1",
};

// Every scuda stand-in exports this symbol; the real driver never does.
constexpr char kStandInMarker[] = "scuda_stand_in_marker";

void* open_real(const std::string& path, std::string* why) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    *why = dlerror();
    return nullptr;
  }
  if (dlsym(h, kStandInMarker)) {
    dlclose(h);
    *why = "it is a scuda stand-in, not NVIDIA's driver";
    return nullptr;
  }
  return h;
}

void bind_all(void* h, DriverTable* t) {
#define SCUDA_DRIVER_FN(name, params, args) \
  t->name = reinterpret_cast<decltype(t->name)>(dlsym(h, #name));
#include "driver_api.inc"
#undef SCUDA_DRIVER_FN
}

}  // namespace

bool load_driver(const std::string& path, DriverTable* table, std::string* error) {
  std::vector<std::string> tried;
  auto attempt = [&](const std::string& p) {
    std::string why;
    void* h = open_real(p, &why);
    if (!h) {
      tried.push_back(fmt::format("{} ({})", p, why));
      return false;
    }
    table->handle = h;
    table->path = p;
    bind_all(h, table);
    return true;
  };
  if (!path.empty()) {
    if (attempt(path)) return true;
  } else {
    for (const char* candidate : kDriverCandidates)
      if (attempt(candidate)) return true;
  }
  *error = fmt::format("no CUDA driver could be loaded; tried: {}", fmt::join(tried, "; "));
  return false;
}

}  // namespace scuda
