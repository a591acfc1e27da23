#include "client/program_files.h"

#include <fstream>

#include <spdlog/spdlog.h>

namespace scuda::client {

CUresult write_program_file(const char* path, std::string_view text, const char* call) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file.write(text.data(), static_cast<std::streamsize>(text.size())) || !file.flush()) {
    spdlog::error("{}: cannot write {}", call, path);
    return CUDA_ERROR_OPERATING_SYSTEM;
  }
  return CUDA_SUCCESS;
}

}  // namespace scuda::client
