// Unified-memory vector add: the host fills cudaMallocManaged arrays, a
// kernel adds them, the host reads the sums; then the host changes one input
// and the kernel runs again on the same pointers.
#define NAME "managed_vector_add"
#include "check.h"
#include "elapsed.h"

__global__ void add(const float* a, const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

static int count_wrong(const float* a, const float* b, const float* c, int n, double* sum) {
  int wrong = 0;
  *sum = 0;
  for (int i = 0; i < n; ++i) {
    if (c[i] != a[i] + b[i]) ++wrong;
    *sum += c[i];
  }
  return wrong;
}

int main() {
  const int n = 1 << 22;  // three arrays of 16 MiB
  float *a, *b, *c;
  CK(cudaMallocManaged(&a, n * sizeof(float)));
  CK(cudaMallocManaged(&b, n * sizeof(float)));
  CK(cudaMallocManaged(&c, n * sizeof(float)));
  const Stopwatch work;  // from the host's first write to its last check
  for (int i = 0; i < n; ++i) a[i] = 0.5f * i, b[i] = 2.0f * (i % 1000);
  int wrong = 0;
  for (int round = 1; round <= 2; ++round) {
    add<<<(n + 255) / 256, 256>>>(a, b, c, n);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    double sum = 0;
    wrong += count_wrong(a, b, c, n, &sum);
    printf("round %d: sum %.1f\n", round, sum);
    for (int i = 0; i < n; i += 3) b[i] = -b[i];
  }
  printf("# work ms %.1f\n", work.ms());
  CK(cudaFree(a));
  CK(cudaFree(b));
  CK(cudaFree(c));
  printf("RESULT %s %s n=%d wrong=%d\n", NAME, wrong ? "FAIL" : "PASS", n, wrong);
  return wrong ? 1 : 0;
}
