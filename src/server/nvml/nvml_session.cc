#include "server/nvml/nvml_session.h"

#include <spdlog/spdlog.h>

namespace scuda::server {

namespace {

std::string& nvml_path() {
  static std::string path;
  return path;
}

}  // namespace

void set_nvml_path(std::string path) { nvml_path() = std::move(path); }

const NvmlTable* session_nvml() {
  static const NvmlTable* const table = []() -> const NvmlTable* {
    auto* t = new NvmlTable;  // never freed: used until the session ends
    std::string error;
    if (load_nvml(nvml_path(), t, &error)) {
      spdlog::info("session loaded NVML {}", t->path);
      return t;
    }
    spdlog::warn("{}; NVML requests fail with NVML_ERROR_LIBRARY_NOT_FOUND", error);
    delete t;
    return nullptr;
  }();
  return table;
}

}  // namespace scuda::server
