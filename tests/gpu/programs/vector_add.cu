// vector_add: c = a + b over 1<<20 floats, checked on the host.
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define NAME "vector_add"
#include "check.h"

__global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

int main() {
  const int n = 1 << 20;
  const size_t bytes = n * sizeof(float);
  std::vector<float> a(n), b(n), c(n, -1.0f);
  for (int i = 0; i < n; ++i) {
    a[i] = 0.5f * i;
    b[i] = 1.0f - 0.25f * (i % 1000);
  }
  float *da, *db, *dc;
  CK(cudaMalloc(&da, bytes));
  CK(cudaMalloc(&db, bytes));
  CK(cudaMalloc(&dc, bytes));
  CK(cudaMemcpy(da, a.data(), bytes, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(db, b.data(), bytes, cudaMemcpyHostToDevice));
  add<<<(n + 255) / 256, 256>>>(da, db, dc, n);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(c.data(), dc, bytes, cudaMemcpyDeviceToHost));
  CK(cudaFree(da));
  CK(cudaFree(db));
  CK(cudaFree(dc));

  int bad = 0, first = -1;
  for (int i = 0; i < n; ++i)
    if (c[i] != a[i] + b[i] && bad++ == 0) first = i;
  if (bad) {
    printf("RESULT %s FAIL %d/%d wrong, first at %d: %g != %g\n", NAME, bad, n, first, c[first],
           a[first] + b[first]);
    return 1;
  }
  printf("RESULT %s PASS n=%d\n", NAME, n);
  return 0;
}
