// memcpy_symbol: __device__ and __constant__ globals written and read
// through cudaMemcpyToSymbol / FromSymbol (with offsets, and async on a
// stream), and through the address cudaGetSymbolAddress gives; a kernel
// combines them, so the device must have seen every write.
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>

#define NAME "memcpy_symbol"
#include "check.h"

constexpr int kN = 1024;
constexpr int kCoeffs = 16;

__constant__ float coeffs[kCoeffs];
__device__ int values[kN];
__device__ float results[kN];
__device__ struct Settings {
  int offset;
  float scale;
} settings;

__global__ void combine() {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < kN) results[i] = (values[i] + settings.offset) * coeffs[i % kCoeffs] * settings.scale;
}

static int failures = 0;

static void check(const char* what, bool ok) {
  if (!ok) ++failures;
  printf("%-40s %s\n", what, ok ? "ok" : "MISMATCH");
}

int main() {
  std::vector<float> c(kCoeffs);
  for (int i = 0; i < kCoeffs; ++i) c[i] = 0.5f + i;
  std::vector<int> v(kN);
  for (int i = 0; i < kN; ++i) v[i] = i * 3 - 500;
  Settings s = {7, 0.25f};

  // Whole symbols, then the upper half of the coefficients again at an offset.
  CK(cudaMemcpyToSymbol(coeffs, c.data(), kCoeffs * sizeof(float)));
  std::vector<float> upper(kCoeffs / 2);
  for (int i = 0; i < kCoeffs / 2; ++i) upper[i] = c[kCoeffs / 2 + i] = -1.0f - i;
  CK(cudaMemcpyToSymbol(coeffs, upper.data(), upper.size() * sizeof(float),
                        kCoeffs / 2 * sizeof(float)));
  CK(cudaMemcpyToSymbol(settings, &s, sizeof s));

  // The values through the symbol's address, as ordinary device memory.
  int* values_addr = nullptr;
  size_t values_size = 0;
  CK(cudaGetSymbolAddress((void**)&values_addr, values));
  CK(cudaGetSymbolSize(&values_size, values));
  check("cudaGetSymbolSize(values)", values_size == kN * sizeof(int));
  CK(cudaMemcpy(values_addr, v.data(), kN * sizeof(int), cudaMemcpyHostToDevice));

  combine<<<(kN + 255) / 256, 256>>>();
  CK(cudaGetLastError());
  std::vector<float> r(kN);
  CK(cudaMemcpyFromSymbol(r.data(), results, kN * sizeof(float)));
  int wrong = 0;
  for (int i = 0; i < kN; ++i) wrong += r[i] != (v[i] + s.offset) * c[i % kCoeffs] * s.scale;
  check("kernel saw symbols written by copies", wrong == 0);

  std::vector<float> c_back(kCoeffs);
  CK(cudaMemcpyFromSymbol(c_back.data(), coeffs, kCoeffs * sizeof(float)));
  check("constant read back whole", c_back == c);

  // Async: a new settings value and a slice of values on a stream, the
  // kernel, then async reads of one result slice at an offset.
  cudaStream_t st;
  CK(cudaStreamCreate(&st));
  Settings s2 = {-3, 2.0f};
  std::vector<int> slice(100);
  for (int i = 0; i < 100; ++i) slice[i] = v[200 + i] = 10000 + i;
  CK(cudaMemcpyToSymbolAsync(settings, &s2, sizeof s2, 0, cudaMemcpyHostToDevice, st));
  CK(cudaMemcpyToSymbolAsync(values, slice.data(), 100 * sizeof(int), 200 * sizeof(int),
                             cudaMemcpyHostToDevice, st));
  combine<<<(kN + 255) / 256, 256, 0, st>>>();
  CK(cudaGetLastError());
  std::vector<float> part(300);
  Settings s_back = {};
  CK(cudaMemcpyFromSymbolAsync(part.data(), results, 300 * sizeof(float), 100 * sizeof(float),
                               cudaMemcpyDeviceToHost, st));
  CK(cudaMemcpyFromSymbolAsync(&s_back, settings, sizeof s_back, 0, cudaMemcpyDeviceToHost, st));
  CK(cudaStreamSynchronize(st));
  wrong = 0;
  for (int i = 0; i < 300; ++i) {
    const int k = 100 + i;
    wrong += part[i] != (v[k] + s2.offset) * c[k % kCoeffs] * s2.scale;
  }
  check("async symbol copies in stream order", wrong == 0);
  check("async settings read back", s_back.offset == s2.offset && s_back.scale == s2.scale);

  // Device to symbol and symbol to device.
  float* d;
  CK(cudaMalloc(&d, kN * sizeof(float)));
  CK(cudaMemcpyFromSymbol(d, results, kN * sizeof(float), 0, cudaMemcpyDeviceToDevice));
  CK(cudaMemset(d, 0, 16 * sizeof(float)));
  CK(cudaMemcpyToSymbol(results, d, kN * sizeof(float), 0, cudaMemcpyDeviceToDevice));
  CK(cudaMemcpyFromSymbol(r.data(), results, kN * sizeof(float)));
  bool zeroed = true;
  for (int i = 0; i < 16; ++i) zeroed = zeroed && r[i] == 0.0f;
  check("device<->symbol copies",
        zeroed && r[300] == (v[300] + s2.offset) * c[300 % kCoeffs] * s2.scale);
  CK(cudaFree(d));
  CK(cudaStreamDestroy(st));
  printf("RESULT %s %s %d mismatches\n", NAME, failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
