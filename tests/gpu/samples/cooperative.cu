// cooperative: a grid-wide reduction in one kernel. Every block sums its
// slice into a partial, grid.sync(), block 0 folds the partials, grid.sync()
// again, and every block then scales its slice by the total, which only a
// grid-wide barrier makes safe. Launched with cudaLaunchCooperativeKernel at
// the largest grid the device can hold resident.
#include <cooperative_groups.h>
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <vector>

#define NAME "cooperative"
#include "check.h"

namespace cg = cooperative_groups;

constexpr int kThreads = 256;

__global__ void reduce_and_normalise(const unsigned* in, unsigned long long* partials,
                                     unsigned long long* total, unsigned* out, int n) {
  cg::grid_group grid = cg::this_grid();
  __shared__ unsigned long long sums[kThreads];
  unsigned long long mine = 0;
  for (int i = grid.thread_rank(); i < n; i += grid.size()) mine += in[i];
  sums[threadIdx.x] = mine;
  __syncthreads();
  for (int s = blockDim.x / 2; s > 0; s /= 2) {
    if (threadIdx.x < s) sums[threadIdx.x] += sums[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0) partials[blockIdx.x] = sums[0];
  grid.sync();
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    unsigned long long t = 0;
    for (int b = 0; b < gridDim.x; ++b) t += partials[b];
    *total = t;
  }
  grid.sync();
  const unsigned long long t = *total;
  for (int i = grid.thread_rank(); i < n; i += grid.size())
    out[i] = (unsigned)((in[i] * 1000000000000ull) / (t ? t : 1));
}

int main() {
  int dev = 0, supported = 0, sms = 0, per_sm = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&supported, cudaDevAttrCooperativeLaunch, dev));
  if (!supported) {
    printf("RESULT %s FAIL cooperative launch not supported\n", NAME);
    return 1;
  }
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reduce_and_normalise, kThreads, 0));
  const int blocks = sms * per_sm;
  printf("# grid %d blocks (%d SMs x %d) of %d threads\n", blocks, sms, per_sm, kThreads);

  const int n = 3 << 20;
  std::vector<unsigned> in(n);
  uint32_t x = 12345;
  unsigned long long want_total = 0;
  for (int i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    in[i] = x % 1000;
    want_total += in[i];
  }
  unsigned *d_in, *d_out;
  unsigned long long *d_partials, *d_total;
  CK(cudaMalloc(&d_in, n * sizeof(unsigned)));
  CK(cudaMalloc(&d_out, n * sizeof(unsigned)));
  CK(cudaMalloc(&d_partials, blocks * sizeof(unsigned long long)));
  CK(cudaMalloc(&d_total, sizeof(unsigned long long)));
  CK(cudaMemcpy(d_in, in.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice));

  int count = n;
  void* args[] = {&d_in, &d_partials, &d_total, &d_out, &count};
  CK(cudaLaunchCooperativeKernel((void*)reduce_and_normalise, blocks, kThreads, args, 0, nullptr));
  CK(cudaDeviceSynchronize());

  unsigned long long total = 0;
  std::vector<unsigned> out(n);
  CK(cudaMemcpy(&total, d_total, sizeof total, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(out.data(), d_out, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int i = 0; i < n; ++i)
    wrong += out[i] != (unsigned)((in[i] * 1000000000000ull) / want_total);
  printf("total %llu (host %llu), %d of %d normalised values wrong\n", total, want_total, wrong, n);

  CK(cudaFree(d_in));
  CK(cudaFree(d_out));
  CK(cudaFree(d_partials));
  CK(cudaFree(d_total));
  const bool ok = total == want_total && wrong == 0;
  printf("RESULT %s %s total=%llu\n", NAME, ok ? "PASS" : "FAIL", total);
  return ok ? 0 : 1;
}
