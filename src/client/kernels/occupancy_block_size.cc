// cuOccupancyMaxPotentialBlockSize: the program's callback (dynamic shared
// memory for a block size) is a client function, so the search runs here,
// as cudart's cudaOccupancyMaxPotentialBlockSize does in its header: each
// candidate block size, a warp apart, asks the (cached) occupancy query.
#include <cuda.h>

#include <algorithm>

#include "client/runtime.h"
#include "custom.h"

namespace {

CUresult attribute(CUdevice_attribute a, int* value) {
  CUdevice dev = 0;
  const CUresult rc = cuCtxGetDevice(&dev);
  return rc == CUDA_SUCCESS ? cuDeviceGetAttribute(value, a, dev) : rc;
}

CUresult potential_block_size(int* min_grid, int* block_size, CUfunction fn,
                              CUoccupancyB2DSize smem_of, size_t smem, int limit, unsigned flags) {
  if (!min_grid || !block_size || !fn) return CUDA_ERROR_INVALID_VALUE;
  int threads_per_sm = 0, warp = 0, device_max = 0, sms = 0, function_max = 0;
  CUresult rc = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, &threads_per_sm);
  if (rc == CUDA_SUCCESS) rc = attribute(CU_DEVICE_ATTRIBUTE_WARP_SIZE, &warp);
  if (rc == CUDA_SUCCESS) rc = attribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &device_max);
  if (rc == CUDA_SUCCESS) rc = attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, &sms);
  if (rc == CUDA_SUCCESS)
    rc = cuFuncGetAttribute(&function_max, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, fn);
  if (rc != CUDA_SUCCESS) return rc;
  if (warp <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (limit <= 0) limit = device_max;
  limit = std::min({limit, device_max, function_max});
  int best_size = 0, best_blocks = 0, best_threads = 0;
  for (int aligned = (limit + warp - 1) / warp * warp; aligned > 0; aligned -= warp) {
    const int size = std::min(limit, aligned);
    int blocks = 0;
    rc = cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(
        &blocks, fn, size, smem_of ? smem_of(size) : smem, flags);
    if (rc != CUDA_SUCCESS) return rc;
    if (size * blocks > best_threads) {
      best_size = size;
      best_blocks = blocks;
      best_threads = size * blocks;
    }
    if (best_threads == threads_per_sm) break;
  }
  *min_grid = best_blocks * sms;
  *block_size = best_size;
  return CUDA_SUCCESS;
}

}  // namespace

CUresult scuda::client::custom::cuOccupancyMaxPotentialBlockSize(int* min_grid, int* block_size,
                                                                 CUfunction fn,
                                                                 CUoccupancyB2DSize smem_of,
                                                                 size_t smem, int limit) {
  return potential_block_size(min_grid, block_size, fn, smem_of, smem, limit, CU_OCCUPANCY_DEFAULT);
}

CUresult scuda::client::custom::cuOccupancyMaxPotentialBlockSizeWithFlags(
    int* min_grid, int* block_size, CUfunction fn, CUoccupancyB2DSize smem_of, size_t smem,
    int limit, unsigned int flags) {
  return potential_block_size(min_grid, block_size, fn, smem_of, smem, limit, flags);
}
