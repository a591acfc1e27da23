// cuGetExportTable: of the driver's hidden tables, the double serves only
// cudart's, whose slot 2 hands out a device's primary context without
// activating it, as NVIDIA's does. Other ids are not found.
#include <cuda.h>

#include <cstdint>
#include <cstring>

#include "state.h"

using namespace scuda_double;

namespace {

// 6bd5fb6c-5bf4-e74a-8987-d93912fd9df9, bytes in written order.
constexpr unsigned char kCudartInterface[16] = {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a,
                                                0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9};

CUresult primary_context(CUcontext* pctx, CUdevice dev) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *pctx = as_handle<CUcontext>(state().primary[dev]);
  return CUDA_SUCCESS;
}

constexpr size_t kWords = 13;

const void* const* cudart_table() {
  static const void* words[kWords] = {};
  words[0] = reinterpret_cast<const void*>(kWords * sizeof(void*));
  words[2] = reinterpret_cast<const void*>(&primary_context);
  return words;
}

}  // namespace

extern "C" {

CUresult cuGetExportTable(const void** table, const CUuuid* id) {
  if (table == nullptr || id == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (std::memcmp(id->bytes, kCudartInterface, sizeof kCudartInterface) != 0)
    return CUDA_ERROR_NOT_FOUND;
  *table = cudart_table();
  return CUDA_SUCCESS;
}

}  // extern "C"
