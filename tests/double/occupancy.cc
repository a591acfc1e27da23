// Occupancy: a Hopper-like model (2,048 threads, 32 blocks and 228 KiB of
// shared memory per multiprocessor, 4 multiprocessors), enough for tests to
// tell different questions apart.
#include <cuda.h>

#include <algorithm>

#include "functions.h"
#include "state.h"

using namespace scuda_double;

namespace {

constexpr int kMultiprocessors = 4;

int blocks_per_multiprocessor(int block_size, size_t smem) {
  int n = std::min(32, 2048 / block_size);
  if (smem > 0) n = std::min<size_t>(n, 233472 / smem);
  return n;
}

// The blocks a cluster of `config` holds; 0 when it names no cluster.
unsigned cluster_blocks(const CUlaunchConfig& config) {
  for (unsigned i = 0; i < config.numAttrs; ++i) {
    const CUlaunchAttribute& a = config.attrs[i];
    if (a.id == CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION)
      return a.value.clusterDim.x * a.value.clusterDim.y * a.value.clusterDim.z;
  }
  return 0;
}

// The checks both cluster questions share; the block size in *block_size.
CUresult check_cluster_query(const int* out, CUfunction fn, const CUlaunchConfig* config,
                             int* block_size) {
  if (resolve_function(fn) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (out == nullptr || config == nullptr || (config->numAttrs && !config->attrs))
    return CUDA_ERROR_INVALID_VALUE;
  const uint64_t threads = uint64_t{config->blockDimX} * config->blockDimY * config->blockDimZ;
  if (threads == 0 || threads > 1024) return CUDA_ERROR_INVALID_VALUE;
  *block_size = static_cast<int>(threads);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int* blocks, CUfunction fn,
                                                              int block_size, size_t smem,
                                                              unsigned int) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (resolve_function(fn) == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (blocks == nullptr || block_size <= 0 || block_size > 1024) return CUDA_ERROR_INVALID_VALUE;
  *blocks = blocks_per_multiprocessor(block_size, smem);
  return CUDA_SUCCESS;
}

// A cluster's blocks may spread over the whole device.
CUresult cuOccupancyMaxActiveClusters(int* clusters, CUfunction fn, const CUlaunchConfig* config) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  int block_size = 0;
  if (CUresult rc = check_cluster_query(clusters, fn, config, &block_size); rc != CUDA_SUCCESS)
    return rc;
  const unsigned size = cluster_blocks(*config);
  if (size == 0) return CUDA_ERROR_INVALID_CLUSTER_SIZE;
  *clusters = static_cast<int>(
      kMultiprocessors * blocks_per_multiprocessor(block_size, config->sharedMemBytes) / size);
  return CUDA_SUCCESS;
}

// The portable limit of 8 blocks, or fewer when fewer fit on the device.
CUresult cuOccupancyMaxPotentialClusterSize(int* size, CUfunction fn,
                                            const CUlaunchConfig* config) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  int block_size = 0;
  if (CUresult rc = check_cluster_query(size, fn, config, &block_size); rc != CUDA_SUCCESS)
    return rc;
  *size =
      std::min(8, kMultiprocessors * blocks_per_multiprocessor(block_size, config->sharedMemBytes));
  return CUDA_SUCCESS;
}

}  // extern "C"
