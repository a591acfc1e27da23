// streams_events: 4 streams, each runs a busy kernel between two events.
// Stream s waits (cudaStreamWaitEvent) for stream s-1 and consumes its
// output, so wrong ordering shows up in the checked results.
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#define NAME "streams_events"
#include "check.h"

const int kStreams = 4, kN = 1 << 14, kIters = 1 << 18;

__host__ __device__ uint32_t churn(uint32_t x, int iters) {
  for (int k = 0; k < iters; ++k) {
    x = x * 1664525u + 1013904223u;
    x ^= x >> 13;
  }
  return x;
}

__global__ void busy(const uint32_t* in, uint32_t* out, int n, uint32_t salt) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = churn((in ? in[i] : (uint32_t)i) ^ salt, kIters);
}

int main() {
  cudaStream_t st[kStreams];
  cudaEvent_t start[kStreams], stop[kStreams];
  uint32_t* d[kStreams];
  for (int s = 0; s < kStreams; ++s) {
    CK(cudaStreamCreate(&st[s]));
    CK(cudaEventCreate(&start[s]));
    CK(cudaEventCreate(&stop[s]));
    CK(cudaMalloc(&d[s], kN * sizeof(uint32_t)));
  }
  for (int s = 0; s < kStreams; ++s) {
    if (s > 0) CK(cudaStreamWaitEvent(st[s], stop[s - 1], 0));
    CK(cudaEventRecord(start[s], st[s]));
    busy<<<kN / 128, 128, 0, st[s]>>>(s ? d[s - 1] : nullptr, d[s], kN, 0x1000u * (s + 1));
    CK(cudaGetLastError());
    CK(cudaEventRecord(stop[s], st[s]));
  }
  CK(cudaEventSynchronize(stop[kStreams - 1]));
  CK(cudaEventQuery(stop[kStreams - 1]));

  int bad = 0;
  float total = 0, longest = 0;
  for (int s = 0; s < kStreams; ++s) {
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, start[s], stop[s]));
    printf("stream %d kernel %.3f ms\n", s, ms);
    if (!(ms > 0 && ms < 10000)) bad++;
    if (ms > longest) longest = ms;
  }
  CK(cudaEventElapsedTime(&total, start[0], stop[kStreams - 1]));
  printf("chain start[0]..stop[%d] %.3f ms\n", kStreams - 1, total);
  if (!(total >= longest * 0.99f && total < 40000)) bad++;

  // Check a sample of every stream's output against the host.
  std::vector<uint32_t> h(kN), prev(kN);
  int wrong = 0;
  for (int s = 0; s < kStreams; ++s) {
    CK(cudaMemcpy(h.data(), d[s], kN * sizeof(uint32_t), cudaMemcpyDeviceToHost));
    for (int i = 0; i < kN; i += 257) {
      uint32_t in = s ? prev[i] : (uint32_t)i;
      if (h[i] != churn(in ^ (0x1000u * (s + 1)), kIters)) wrong++;
    }
    prev = h;
  }
  for (int s = 0; s < kStreams; ++s) {
    CK(cudaStreamDestroy(st[s]));
    CK(cudaEventDestroy(start[s]));
    CK(cudaEventDestroy(stop[s]));
    CK(cudaFree(d[s]));
  }
  if (bad || wrong) {
    printf("RESULT %s FAIL timing_bad=%d wrong_values=%d\n", NAME, bad, wrong);
    return 1;
  }
  printf("RESULT %s PASS 4 chained streams, chain %.2f ms\n", NAME, total);
  return 0;
}
