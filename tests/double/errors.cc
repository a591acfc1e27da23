// cuGetErrorName / cuGetErrorString for the codes the double returns.
#include <cuda.h>

#include <iterator>

namespace {

struct ErrorText {
  CUresult code;
  const char* name;
  const char* text;
};

constexpr ErrorText kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

const ErrorText* lookup(CUresult code) {
  for (const ErrorText& entry : kErrors) {
    if (entry.code == code) return &entry;
  }
  return nullptr;
}

// Like the real driver: an unknown code gives INVALID_VALUE and *pStr = NULL.
CUresult describe(CUresult code, const char** out, bool want_name) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const ErrorText* entry = lookup(code);
  if (entry == nullptr) {
    *out = nullptr;
    return CUDA_ERROR_INVALID_VALUE;
  }
  *out = want_name ? entry->name : entry->text;
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuGetErrorName(CUresult error, const char** pStr) { return describe(error, pStr, true); }

CUresult cuGetErrorString(CUresult error, const char** pStr) {
  return describe(error, pStr, false);
}

}  // extern "C"
