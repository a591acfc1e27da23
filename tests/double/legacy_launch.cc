// The launch API before cuLaunchKernel (cuFuncSetBlockShape, cuParamSet*,
// cuLaunchGrid): each function keeps a block shape and an argument buffer,
// which cuLaunchGrid launches as cuLaunchKernel's `extra` buffer.
#include <cuda.h>

#include <cstring>
#include <map>
#include <vector>

#include "functions.h"
#include "state.h"

using namespace scuda_double;

namespace {

struct Legacy {
  unsigned block[3] = {1, 1, 1};
  std::vector<uint8_t> params;
};

// Under the state lock of the Call that reaches it.
std::map<CUfunction, Legacy>& legacy() {
  static auto* m = new std::map<CUfunction, Legacy>;  // never freed: used until exit
  return *m;
}

// The function's legacy state, or nullptr (with *status set) when `f` is
// not a function.
Legacy* legacy_of(CUfunction f, CUresult* status) {
  if (*status != CUDA_SUCCESS) return nullptr;
  if (resolve_function(f) == nullptr) {
    *status = CUDA_ERROR_INVALID_HANDLE;
    return nullptr;
  }
  return &legacy()[f];
}

CUresult set_bytes(CUfunction f, int offset, const void* bytes, size_t size) {
  Call call = begin_in_context();
  Legacy* l = legacy_of(f, &call.status);
  if (l == nullptr) return call.status;
  if (offset < 0 || bytes == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (l->params.size() < offset + size) l->params.resize(offset + size);
  std::memcpy(l->params.data() + offset, bytes, size);
  return CUDA_SUCCESS;
}

CUresult launch_grid(CUfunction f, int width, int height, CUstream stream) {
  unsigned block[3];
  std::vector<uint8_t> params;
  {
    Call call = begin_in_context();
    Legacy* l = legacy_of(f, &call.status);
    if (l == nullptr) return call.status;
    std::memcpy(block, l->block, sizeof block);
    params = l->params;
  }
  size_t size = params.size();
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, params.data(), CU_LAUNCH_PARAM_BUFFER_SIZE,
                   &size, CU_LAUNCH_PARAM_END};
  return cuLaunchKernel(f, width, height, 1, block[0], block[1], block[2], 0, stream, nullptr,
                        extra);
}

}  // namespace

extern "C" {

CUresult cuFuncSetBlockShape(CUfunction f, int x, int y, int z) {
  Call call = begin_in_context();
  Legacy* l = legacy_of(f, &call.status);
  if (l == nullptr) return call.status;
  if (x <= 0 || y <= 0 || z <= 0) return CUDA_ERROR_INVALID_VALUE;
  l->block[0] = x, l->block[1] = y, l->block[2] = z;
  return CUDA_SUCCESS;
}

CUresult cuParamSetSize(CUfunction f, unsigned int numbytes) {
  Call call = begin_in_context();
  Legacy* l = legacy_of(f, &call.status);
  if (l == nullptr) return call.status;
  l->params.resize(numbytes);
  return CUDA_SUCCESS;
}

CUresult cuParamSeti(CUfunction f, int offset, unsigned int value) {
  return set_bytes(f, offset, &value, sizeof value);
}

CUresult cuParamSetf(CUfunction f, int offset, float value) {
  return set_bytes(f, offset, &value, sizeof value);
}

CUresult cuParamSetv(CUfunction f, int offset, void* ptr, unsigned int numbytes) {
  return set_bytes(f, offset, ptr, numbytes);
}

CUresult cuLaunchGrid(CUfunction f, int width, int height) {
  return launch_grid(f, width, height, nullptr);
}

CUresult cuLaunchGridAsync(CUfunction f, int width, int height, CUstream stream) {
  return launch_grid(f, width, height, stream);
}

}  // extern "C"
