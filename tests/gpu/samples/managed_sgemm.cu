// nvcc: -lcublas
// cublasSgemm on 512x512 managed matrices, ten rounds: the host writes A and
// B, cuBLAS multiplies, the host reads C and checks sampled entries against a
// CPU product, then changes A for the next round. Each round moves every
// matrix between host and device once, as unified memory must.
#define NAME "managed_sgemm"
#include "cublas_check.h"
#include "elapsed.h"

#include <cmath>

// Entries of C checked per round: every 97th, column-major as cuBLAS.
static int count_wrong(const float* a, const float* b, const float* c, int m, double* sum) {
  int wrong = 0;
  for (int at = 0; at < m * m; at += 97) {
    const int i = at % m, j = at / m;
    double want = 0;
    for (int l = 0; l < m; ++l) want += double(a[i + l * m]) * b[l + j * m];
    if (std::fabs(c[at] - want) > 1e-3 * (1 + std::fabs(want))) ++wrong;
    *sum += want;
  }
  return wrong;
}

int main() {
  const int m = 512, size = m * m, rounds = 10;
  float *a, *b, *c;
  CK(cudaMallocManaged(&a, size * sizeof(float)));
  CK(cudaMallocManaged(&b, size * sizeof(float)));
  CK(cudaMallocManaged(&c, size * sizeof(float)));
  for (int i = 0; i < size; ++i) a[i] = (i % 17) * 0.25f - 2.0f, b[i] = (i % 13) * 0.5f - 3.0f;
  // cuBLAS loads its kernels' libraries in cublasCreate, which the driver
  // does before it returns and scuda sends without waiting: the first
  // round through scuda waits for them instead. Timed with the rounds too.
  const Stopwatch with_create;
  cublasHandle_t handle;
  CKB(cublasCreate(&handle));
  const float alpha = 1.0f, beta = 0.0f;
  int wrong = 0;
  double sum = 0;
  const Stopwatch work;  // the ten rounds
  for (int round = 0; round < rounds; ++round) {
    CKB(cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &alpha, a, m, b, m, &beta, c, m));
    CK(cudaDeviceSynchronize());
    wrong += count_wrong(a, b, c, m, &sum);
    for (int i = round % 7; i < size; i += 7) a[i] += 0.125f;
    if (round == 0) printf("# first round ms %.1f\n", work.ms());
  }
  printf("# rounds ms %.1f\n", work.ms());
  printf("# cublasCreate and rounds ms %.1f\n", with_create.ms());
  CKB(cublasDestroy(handle));
  for (float* p : {a, b, c}) CK(cudaFree(p));
  printf("%d rounds of %dx%d, reference sum %.3f\n", rounds, m, m, sum);
  printf("RESULT %s %s rounds=%d wrong=%d\n", NAME, wrong ? "FAIL" : "PASS", rounds, wrong);
  return wrong ? 1 : 0;
}
