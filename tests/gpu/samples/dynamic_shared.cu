// dynamic_shared: a kernel with `extern __shared__` storage launched with
// several dynamic sizes, up to the device's opt-in maximum (> 48 KiB) after
// cudaFuncSetAttribute(MaxDynamicSharedMemorySize). Each block stages its
// slice in shared memory and writes it back reversed, so a wrong size or a
// launch that did not run shows in the data. A launch over the limit set
// must fail, at the launch or at the next synchronize.
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>

#define NAME "dynamic_shared"
#include "check.h"

constexpr int kThreads = 256;

// Reverses each block's `per_block` ints through shared memory.
__global__ void reverse_blocks(const int* in, int* out, int per_block) {
  extern __shared__ int stage[];
  const int* src = in + blockIdx.x * per_block;
  for (int i = threadIdx.x; i < per_block; i += blockDim.x) stage[i] = src[i];
  __syncthreads();
  int* dst = out + blockIdx.x * per_block;
  for (int i = threadIdx.x; i < per_block; i += blockDim.x) dst[i] = stage[per_block - 1 - i];
}

static int failures = 0;

static void run(int bytes, int blocks) {
  const int per_block = bytes / sizeof(int);
  const int n = per_block * blocks;
  std::vector<int> in(n), out(n, 0);
  for (int i = 0; i < n; ++i) in[i] = i * 7 + 3;
  int *d_in, *d_out;
  CK(cudaMalloc(&d_in, n * sizeof(int)));
  CK(cudaMalloc(&d_out, n * sizeof(int)));
  CK(cudaMemcpy(d_in, in.data(), n * sizeof(int), cudaMemcpyHostToDevice));
  reverse_blocks<<<blocks, kThreads, bytes>>>(d_in, d_out, per_block);
  CK(cudaGetLastError());
  CK(cudaMemcpy(out.data(), d_out, n * sizeof(int), cudaMemcpyDeviceToHost));
  int wrong = 0;
  for (int b = 0; b < blocks; ++b)
    for (int i = 0; i < per_block; ++i)
      wrong += out[b * per_block + i] != in[b * per_block + per_block - 1 - i];
  if (wrong) ++failures;
  printf("shared %6d bytes x %d blocks: %d wrong %s\n", bytes, blocks, wrong,
         wrong ? "MISMATCH" : "ok");
  CK(cudaFree(d_in));
  CK(cudaFree(d_out));
}

int main() {
  int dev = 0, optin = 0;
  CK(cudaGetDevice(&dev));
  CK(cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev));
  printf("# opt-in limit %d bytes per block\n", optin);
  for (int bytes : {4, 1024, 16 << 10, 48 << 10}) run(bytes, 37);

  // Beyond 48 KiB only after opting in.
  const int big = 100 << 10;
  if (optin < big) {
    printf("RESULT %s FAIL opt-in limit %d below %d\n", NAME, optin, big);
    return 1;
  }
  CK(cudaFuncSetAttribute(reverse_blocks, cudaFuncAttributeMaxDynamicSharedMemorySize, big));
  cudaFuncAttributes attrs;
  CK(cudaFuncGetAttributes(&attrs, reverse_blocks));
  printf("max dynamic shared after opt-in: %d\n", attrs.maxDynamicSharedSizeBytes);
  for (int bytes : {64 << 10, big}) run(bytes, 11);

  // Over the limit just set: refused (natively at the launch; remotely the
  // launch is sent one-way, so the error may come with the synchronize).
  int *d_in, *d_out;
  CK(cudaMalloc(&d_in, 4));
  CK(cudaMalloc(&d_out, 4));
  reverse_blocks<<<1, kThreads, big + 1024>>>(d_in, d_out, 1);
  cudaError_t launch = cudaGetLastError();
  cudaError_t sync = cudaDeviceSynchronize();
  cudaError_t first = launch != cudaSuccess ? launch : sync;
  printf("over the limit: %s\n", cudaGetErrorName(first));
  if (first == cudaSuccess) ++failures;
  cudaGetLastError();  // clears the error, whichever call returned it
  CK(cudaFree(d_in));
  CK(cudaFree(d_out));
  printf("RESULT %s %s %d failures\n", NAME, failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
