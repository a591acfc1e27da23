#include "packing.h"

#include <cstring>

namespace scuda_double {
namespace {

struct ExtraBuffer {
  const void* pointer = nullptr;
  const size_t* size = nullptr;
};

bool read_extra(void** extra, ExtraBuffer* out) {
  for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
      out->pointer = extra[i + 1];
    } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
      out->size = static_cast<const size_t*>(extra[i + 1]);
    } else {
      return false;
    }
  }
  return out->pointer != nullptr && out->size != nullptr;
}

bool size_matches(const KernelDesc& kernel, size_t size) {
  size_t padded = (kernel.packed_size + kernel.alignment - 1) / kernel.alignment * kernel.alignment;
  return size == kernel.packed_size || size == padded;
}

CUresult pack_from_extra(const KernelDesc& kernel, void** extra, std::vector<uint8_t>* out) {
  ExtraBuffer buffer;
  if (!read_extra(extra, &buffer) || !size_matches(kernel, *buffer.size)) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  std::memcpy(out->data(), buffer.pointer, kernel.packed_size);
  return CUDA_SUCCESS;
}

CUresult pack_from_params(const KernelDesc& kernel, void** params, std::vector<uint8_t>* out) {
  for (size_t i = 0; i < kernel.sizes.size(); ++i) {
    if (params[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    std::memcpy(out->data() + kernel.offsets[i], params[i], kernel.sizes[i]);
  }
  return CUDA_SUCCESS;
}

}  // namespace

CUresult pack_params(const KernelDesc& kernel, void** params, void** extra,
                     std::vector<uint8_t>* out) {
  out->assign(kernel.packed_size, 0);
  if (params != nullptr && extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (params != nullptr) return pack_from_params(kernel, params, out);
  if (extra != nullptr) return pack_from_extra(kernel, extra, out);
  return kernel.sizes.empty() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // namespace scuda_double
