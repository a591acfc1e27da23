// cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags: a Hopper-like model
// (2,048 threads, 32 blocks and 228 KiB of shared memory per multiprocessor),
// enough for tests to tell different questions apart.
#include <cuda.h>

#include <algorithm>

#include "functions.h"
#include "state.h"

using namespace scuda_double;

extern "C" {

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, CUfunction fn,
                                                              int block_size, size_t smem,
                                                              unsigned int) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (resolve_function(fn) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (blocks == nullptr || block_size <= 0 || block_size > 1024) return CUDA_ERROR_INVALID_VALUE;
  int n = std::min(32, 2048 / block_size);
  if (smem > 0) n = std::min<size_t>(n, 233472 / smem);
  *blocks = n;
  return CUDA_SUCCESS;
}

}  // extern "C"
