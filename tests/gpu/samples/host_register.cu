// Registered host memory: cudaHostRegister on memory the program already
// has (a heap block at an unaligned address, and a page-aligned one). A
// kernel reads and writes it through the host pointer itself (UVA) and
// through cudaHostGetDevicePointer, the host changes it between launches,
// async copies read and write it, and cudaHostUnregister leaves the last
// results.
#define NAME "host_register"
#include <cstdlib>

#include "check.h"

__global__ void affine(int* p, int n, int k) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = p[i] * k + 1;
}

long long sum(const int* p, int n) {
  long long s = 0;
  for (int i = 0; i < n; ++i) s += p[i];
  return s;
}

int main() {
  const int n = 300000;
  char* heap = static_cast<char*>(malloc(n * sizeof(int) + 64));
  int* a = reinterpret_cast<int*>(heap + 12);  // shares pages with the heap
  int* b = static_cast<int*>(aligned_alloc(4096, n * sizeof(int)));
  for (int i = 0; i < n; ++i) a[i] = i % 1000, b[i] = -(i % 7);
  CK(cudaHostRegister(a, n * sizeof(int), cudaHostRegisterDefault));
  CK(cudaHostRegister(b, n * sizeof(int), cudaHostRegisterMapped));
  int *da = nullptr, *db = nullptr;
  CK(cudaHostGetDevicePointer(&da, a, 0));
  CK(cudaHostGetDevicePointer(&db, b, 0));
  unsigned flags = 0;
  CK(cudaHostGetFlags(&flags, b));
  int wrong = 0;
  for (int k = 2; k <= 3; ++k) {
    a[k] = 5000 + k;                            // a host change between launches
    affine<<<(n + 255) / 256, 256>>>(a, n, k);  // the host pointer itself
    affine<<<(n + 255) / 256, 256>>>(db, n, k);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    if (a[k] != (5000 + k) * k + 1) ++wrong;
    printf("k=%d sums %lld %lld\n", k, sum(a, n), sum(b, n));
  }
  int* d = nullptr;
  CK(cudaMalloc(&d, n * sizeof(int)));
  CK(cudaMemcpyAsync(d, a, n * sizeof(int), cudaMemcpyHostToDevice));
  affine<<<(n + 255) / 256, 256>>>(d, n, 1);
  CK(cudaMemcpy(b, d, n * sizeof(int), cudaMemcpyDeviceToHost));
  for (int i = 0; i < n; ++i)
    if (b[i] != a[i] + 1) ++wrong;
  affine<<<(n + 255) / 256, 256>>>(da, n, 2);
  CK(cudaDeviceSynchronize());
  CK(cudaHostUnregister(a));
  CK(cudaHostUnregister(b));
  printf("after unregister %lld %lld\n", sum(a, n), sum(b, n));
  printf("mapped flag set: %s, same address: %s\n", flags & cudaHostRegisterMapped ? "yes" : "no",
         da == a ? "yes" : "no");
  CK(cudaFree(d));
  free(heap);
  free(b);
  const bool ok = wrong == 0 && (flags & cudaHostRegisterMapped);
  printf("RESULT %s %s n=%d wrong=%d\n", NAME, ok ? "PASS" : "FAIL", n, wrong);
  return ok ? 0 : 1;
}
