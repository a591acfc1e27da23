// fault_illegal: a kernel that writes through an address no allocation
// holds, for tests/gpu/faults.sh. Passes (exit 0) when a first, good kernel
// works and the faulting one makes the synchronize fail with
// cudaErrorIllegalAddress or cudaErrorLaunchFailure; fails when the fault
// goes unreported or another error comes.
#include <cuda_runtime.h>
#include <cstdio>

#define NAME "fault_illegal"
#include "check.h"

__global__ void fill(unsigned* p, unsigned v, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = v;
}

int main() {
  const int n = 1 << 16;
  unsigned* d;
  unsigned back = 0;
  CK(cudaMalloc(&d, n * sizeof(unsigned)));
  fill<<<64, 256>>>(d, 7u, n);
  CK(cudaGetLastError());
  CK(cudaMemcpy(&back, d + n - 1, sizeof back, cudaMemcpyDeviceToHost));
  if (back != 7u) {
    printf("RESULT %s FAIL the good kernel wrote %u, not 7\n", NAME, back);
    return 1;
  }
  // Page 0 of the device's address space is never mapped.
  fill<<<64, 256>>>(reinterpret_cast<unsigned*>(0x100), 1u, n);
  cudaError_t launch = cudaGetLastError();
  cudaError_t sync = cudaDeviceSynchronize();
  cudaError_t e = launch != cudaSuccess ? launch : sync;
  bool ok = e == cudaErrorIllegalAddress || e == cudaErrorLaunchFailure;
  fprintf(stderr, "fault_illegal: launch %s, synchronize %s (%s)\n", cudaGetErrorName(launch),
          cudaGetErrorName(sync), cudaGetErrorString(sync));
  printf("RESULT %s %s %s\n", NAME, ok ? "PASS" : "FAIL", cudaGetErrorName(e));
  return ok ? 0 : 1;
}
