#include "common/real_library.h"

#include <dlfcn.h>

#include <vector>

#include <fmt/format.h>

namespace scuda {

namespace {

// Every scuda stand-in exports this symbol; NVIDIA's libraries never do.
constexpr char kStandInMarker[] = "scuda_stand_in_marker";

void* open_real(const std::string& path, std::string* why) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    *why = dlerror();
    return nullptr;
  }
  if (dlsym(h, kStandInMarker)) {
    dlclose(h);
    *why = "it is a scuda stand-in, not NVIDIA's library";
    return nullptr;
  }
  return h;
}

}  // namespace

void* open_real_library(const std::string& path, std::span<const char* const> candidates,
                        std::string* opened, std::string* tried) {
  std::vector<std::string> paths =
      path.empty() ? std::vector<std::string>(candidates.begin(), candidates.end())
                   : std::vector<std::string>{path};
  std::vector<std::string> failures;
  for (const std::string& p : paths) {
    std::string why;
    if (void* h = open_real(p, &why)) {
      *opened = p;
      return h;
    }
    failures.push_back(fmt::format("{} ({})", p, why));
  }
  *tried = fmt::format("{}", fmt::join(failures, "; "));
  return nullptr;
}

}  // namespace scuda
