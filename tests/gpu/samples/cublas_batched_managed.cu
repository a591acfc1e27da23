// nvcc: -lcublas
// cublasSgemmBatched on managed matrices (the seed README's demo): the host
// fills A and B and the pointer arrays in managed memory, cuBLAS multiplies
// every pair, and the host checks each C against a CPU GEMM.
#define NAME "cublas_batched_managed"
#include "cublas_check.h"

#include <cmath>

int main() {
  const int m = 64, batch = 32, size = m * m;
  float *a, *b, *c;
  float **pa, **pb, **pc;
  CK(cudaMallocManaged(&a, batch * size * sizeof(float)));
  CK(cudaMallocManaged(&b, batch * size * sizeof(float)));
  CK(cudaMallocManaged(&c, batch * size * sizeof(float)));
  CK(cudaMallocManaged(&pa, batch * sizeof(float*)));
  CK(cudaMallocManaged(&pb, batch * sizeof(float*)));
  CK(cudaMallocManaged(&pc, batch * sizeof(float*)));
  for (int i = 0; i < batch * size; ++i) {
    a[i] = (i % 17) * 0.25f - 2.0f;
    b[i] = (i % 13) * 0.5f - 3.0f;
    c[i] = 0.0f;
  }
  for (int k = 0; k < batch; ++k) pa[k] = a + k * size, pb[k] = b + k * size, pc[k] = c + k * size;
  cublasHandle_t handle;
  CKB(cublasCreate(&handle));
  const float alpha = 1.0f, beta = 0.0f;
  CKB(cublasSgemmBatched(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &alpha, pa, m, pb, m, &beta, pc,
                         m, batch));
  CK(cudaDeviceSynchronize());
  int wrong = 0;
  double sum = 0;
  for (int k = 0; k < batch; ++k) {
    const float *ak = a + k * size, *bk = b + k * size, *ck = c + k * size;
    for (int j = 0; j < m; ++j)
      for (int i = 0; i < m; ++i) {  // column-major, as cuBLAS
        double want = 0;
        for (int l = 0; l < m; ++l) want += double(ak[i + l * m]) * bk[l + j * m];
        if (std::fabs(ck[i + j * m] - want) > 1e-3 * (1 + std::fabs(want))) ++wrong;
        sum += want;
      }
  }
  CKB(cublasDestroy(handle));
  for (void* p : {(void*)a, (void*)b, (void*)c, (void*)pa, (void*)pb, (void*)pc}) CK(cudaFree(p));
  printf("batch %d of %dx%d, reference sum %.3f\n", batch, m, m, sum);
  printf("RESULT %s %s batch=%d wrong=%d\n", NAME, wrong ? "FAIL" : "PASS", batch, wrong);
  return wrong ? 1 : 0;
}
