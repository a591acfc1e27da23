// Zero-copy host memory: cudaHostAlloc(cudaHostAllocMapped) and
// cudaHostGetDevicePointer; a kernel writes through the device pointer and
// the host reads the results after synchronizing, twice.
#define NAME "zero_copy"
#include "check.h"

__global__ void affine(const int* in, int* out, int n, int k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * k + 1;
}

int main() {
  const int n = 1 << 16;
  CK(cudaSetDeviceFlags(cudaDeviceMapHost));
  int *in, *out, *d_in, *d_out;
  CK(cudaHostAlloc(&in, n * sizeof(int), cudaHostAllocMapped));
  CK(cudaHostAlloc(&out, n * sizeof(int), cudaHostAllocMapped));
  CK(cudaHostGetDevicePointer(&d_in, in, 0));
  CK(cudaHostGetDevicePointer(&d_out, out, 0));
  unsigned flags = 0;
  CK(cudaHostGetFlags(&flags, in));
  int wrong = 0;
  for (int k = 2; k <= 3; ++k) {
    for (int i = 0; i < n; ++i) in[i] = i % 977 - k;
    affine<<<(n + 255) / 256, 256>>>(d_in, d_out, n, k);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    long long sum = 0;
    for (int i = 0; i < n; ++i) {
      if (out[i] != (i % 977 - k) * k + 1) ++wrong;
      sum += out[i];
    }
    printf("k=%d sum %lld\n", k, sum);
  }
  printf("mapped flag set: %s\n", flags & cudaHostAllocMapped ? "yes" : "no");
  CK(cudaFreeHost(in));
  CK(cudaFreeHost(out));
  const bool ok = wrong == 0 && (flags & cudaHostAllocMapped);
  printf("RESULT %s %s n=%d wrong=%d\n", NAME, ok ? "PASS" : "FAIL", n, wrong);
  return ok ? 0 : 1;
}
