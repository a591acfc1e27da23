// The JIT linker of the double: inputs are double module images (PTX type
// or any other), and the linked image holds every input's kernels and
// globals. The logs say what it did, as the driver's would.
#include <cuda.h>

#include <cstring>
#include <string>

#include "module_image.h"

namespace {

constexpr char kMagic[] = "scuda-double-module\n";

struct Link {
  std::string image = kMagic;
  std::string info, error;
  char* info_out = nullptr;
  char* error_out = nullptr;
  size_t info_room = 0, error_room = 0;
  float* wall_time = nullptr;
  int inputs = 0;
};

void put_log(const std::string& log, char* out, size_t room) {
  if (!out || room == 0) return;
  const size_t n = std::min(log.size(), room - 1);
  std::memcpy(out, log.data(), n);
  out[n] = '\0';
}

}  // namespace

extern "C" {

CUresult cuLinkCreate_v2(unsigned int n, CUjit_option* options, void** values, CUlinkState* out) {
  if (!out || (n && (!options || !values))) return CUDA_ERROR_INVALID_VALUE;
  auto* link = new Link;
  for (unsigned i = 0; i < n; ++i) {
    const auto number = reinterpret_cast<uintptr_t>(values[i]);
    switch (options[i]) {
      case CU_JIT_INFO_LOG_BUFFER: link->info_out = static_cast<char*>(values[i]); break;
      case CU_JIT_ERROR_LOG_BUFFER: link->error_out = static_cast<char*>(values[i]); break;
      case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: link->info_room = number; break;
      case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: link->error_room = number; break;
      case CU_JIT_WALL_TIME: link->wall_time = reinterpret_cast<float*>(&values[i]); break;
      default: break;
    }
  }
  *out = reinterpret_cast<CUlinkState>(link);
  return CUDA_SUCCESS;
}

CUresult cuLinkAddData_v2(CUlinkState state, CUjitInputType, void* data, size_t size,
                          const char* name, unsigned int, CUjit_option*, void**) {
  auto* link = reinterpret_cast<Link*>(state);
  if (!link || !data || !size) return CUDA_ERROR_INVALID_VALUE;
  const std::string text(static_cast<const char*>(data),
                         strnlen(static_cast<const char*>(data), size));
  scuda_double::ImageDesc desc;
  if (!scuda_double::parse_image(text.c_str(), &desc)) {
    link->error += std::string("input ") + (name ? name : "") + " is not a double module image\n";
    put_log(link->error, link->error_out, link->error_room);
    return CUDA_ERROR_INVALID_IMAGE;
  }
  link->image += text.substr(std::strlen(kMagic));
  if (link->image.back() != '\n') link->image += '\n';
  ++link->inputs;
  return CUDA_SUCCESS;
}

CUresult cuLinkComplete(CUlinkState state, void** image, size_t* size) {
  auto* link = reinterpret_cast<Link*>(state);
  if (!link || !image || !size) return CUDA_ERROR_INVALID_VALUE;
  const bool empty = link->inputs == 0;
  if (empty) link->error += "nothing to link\n";
  else link->info = "linked " + std::to_string(link->inputs) + " inputs";
  put_log(link->info, link->info_out, link->info_room);
  put_log(link->error, link->error_out, link->error_room);
  if (link->wall_time) *link->wall_time = 1.5f;
  if (empty) return CUDA_ERROR_INVALID_VALUE;
  *image = link->image.data();
  *size = link->image.size() + 1;
  return CUDA_SUCCESS;
}

CUresult cuLinkDestroy(CUlinkState state) {
  delete reinterpret_cast<Link*>(state);
  return CUDA_SUCCESS;
}

}  // extern "C"
