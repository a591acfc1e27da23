// matmul_tiled: C(512x256) = A(512x384) * B(384x256) with 16x16 shared
// memory tiles, compared against a double precision CPU reference.
#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define NAME "matmul_tiled"
#include "check.h"

const int M = 512, K = 384, N = 256, T = 16;

__global__ void matmul(const float* A, const float* B, float* C) {
  __shared__ float As[T][T], Bs[T][T];
  int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
  float acc = 0.0f;
  for (int t = 0; t < (K + T - 1) / T; ++t) {
    int ak = t * T + threadIdx.x, bk = t * T + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = row < M && ak < K ? A[row * K + ak] : 0.0f;
    Bs[threadIdx.y][threadIdx.x] = bk < K && col < N ? B[bk * N + col] : 0.0f;
    __syncthreads();
    for (int k = 0; k < T; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[row * N + col] = acc;
}

int main() {
  std::vector<float> A(M * K), B(K * N), C(M * N);
  unsigned x = 12345;
  auto rnd = [&] {
    x = x * 1103515245u + 12345u;
    return (x >> 8) / 16777216.0f;
  };
  for (auto& v : A) v = rnd();  // positive, so no sum is near zero
  for (auto& v : B) v = rnd();

  float *dA, *dB, *dC;
  CK(cudaMalloc(&dA, A.size() * sizeof(float)));
  CK(cudaMalloc(&dB, B.size() * sizeof(float)));
  CK(cudaMalloc(&dC, C.size() * sizeof(float)));
  CK(cudaMemcpy(dA, A.data(), A.size() * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemcpy(dB, B.data(), B.size() * sizeof(float), cudaMemcpyHostToDevice));
  CK(cudaMemset(dC, 0, C.size() * sizeof(float)));
  matmul<<<dim3((N + T - 1) / T, (M + T - 1) / T), dim3(T, T)>>>(dA, dB, dC);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(C.data(), dC, C.size() * sizeof(float), cudaMemcpyDeviceToHost));
  CK(cudaFree(dA));
  CK(cudaFree(dB));
  CK(cudaFree(dC));

  double worst = 0;
  for (int i = 0; i < M; ++i)
    for (int j = 0; j < N; ++j) {
      double ref = 0;
      for (int k = 0; k < K; ++k) ref += (double)A[i * K + k] * B[k * N + j];
      double rel = fabs(C[i * N + j] - ref) / fmax(fabs(ref), 1e-6);
      if (rel > worst || rel != rel) worst = rel;  // NaN sticks
    }
  if (!(worst < 1e-4)) {
    printf("RESULT %s FAIL max_rel_err=%.3e\n", NAME, worst);
    return 1;
  }
  printf("RESULT %s PASS %dx%d*%dx%d max_rel_err=%.3e\n", NAME, M, K, K, N, worst);
  return 0;
}
