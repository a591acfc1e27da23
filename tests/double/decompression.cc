// cuMemBatchDecompressAsync: the double's "compression" is the identity,
// so each entry copies its source to its destination and writes the bytes
// it produced. A batch stops at the first entry that is malformed, and
// says which through errorIndex (SIZE_MAX for errors of the whole batch).
#include <cuda.h>

#include <cstdint>
#include <cstring>

#include "allocations.h"
#include "state.h"

using namespace scuda_double;

namespace {

constexpr unsigned kAlgorithms = CU_MEM_DECOMPRESS_ALGORITHM_DEFLATE |
                                 CU_MEM_DECOMPRESS_ALGORITHM_SNAPPY |
                                 CU_MEM_DECOMPRESS_ALGORITHM_LZ4;

uintptr_t address(const void* p) { return reinterpret_cast<uintptr_t>(p); }

bool valid(const CUmemDecompressParams& p) {
  return (p.algo & kAlgorithms) && !(p.algo & (p.algo - 1)) && p.srcNumBytes <= p.dstNumBytes &&
         device_range(address(p.src), p.srcNumBytes) &&
         device_range(address(p.dst), p.dstNumBytes) &&
         device_range(address(p.dstActBytes), sizeof(cuuint32_t));
}

}  // namespace

extern "C" {

CUresult cuMemBatchDecompressAsync(CUmemDecompressParams* paramsArray, size_t count,
                                   unsigned int flags, size_t* errorIndex, CUstream stream) {
  Call call = begin_on_stream(stream);
  if (errorIndex) *errorIndex = SIZE_MAX;
  if (call.status != CUDA_SUCCESS) return call.status;
  if (paramsArray == nullptr || count == 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i) {
    const CUmemDecompressParams& p = paramsArray[i];
    if (!valid(p)) {
      if (errorIndex) *errorIndex = i;
      return CUDA_ERROR_INVALID_VALUE;
    }
    std::memmove(p.dst, p.src, p.srcNumBytes);
    *p.dstActBytes = static_cast<cuuint32_t>(p.srcNumBytes);
  }
  return CUDA_SUCCESS;
}

}  // extern "C"
