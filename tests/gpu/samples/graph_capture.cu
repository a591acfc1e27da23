// graph_capture: a stream capture of kernels, memsets and device-to-device
// copies, forked to a second stream and joined back through events, turned
// into a graph and launched several times. Also checks that capture status
// and info are reported, and that nothing ran while capturing.
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <vector>

#define NAME "graph_capture"
#include "check.h"

const int kN = 1 << 16, kLaunches = 5;

__global__ void fill(float* p, float v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v + (i % 7);
}

__global__ void axpy(const float* x, float* y, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void accumulate(const float* x, float* acc, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) acc[i] += x[i];
}

int main() {
  const size_t bytes = kN * sizeof(float);
  float *x, *y, *z, *acc;
  CK(cudaMalloc(&x, bytes));
  CK(cudaMalloc(&y, bytes));
  CK(cudaMalloc(&z, bytes));
  CK(cudaMalloc(&acc, bytes));
  CK(cudaMemset(acc, 0, bytes));
  CK(cudaMemset(z, 0, bytes));
  cudaStream_t s1, s2;
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t fork, join;
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  const int threads = 256, blocks = (kN + threads - 1) / threads;

  CK(cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
  fill<<<blocks, threads, 0, s1>>>(x, 1.0f, kN);  // x = 1 + i%7
  CK(cudaGetLastError());
  CK(cudaMemsetAsync(y, 0, bytes, s1));  // y = 0
  CK(cudaEventRecord(fork, s1));
  CK(cudaStreamWaitEvent(s2, fork, 0));
  axpy<<<blocks, threads, 0, s2>>>(x, y, 2.0f, kN);  // y = 2x
  CK(cudaGetLastError());
  CK(cudaEventRecord(join, s2));
  CK(cudaStreamWaitEvent(s1, join, 0));
  CK(cudaMemcpyAsync(z, y, bytes, cudaMemcpyDeviceToDevice, s1));  // z = y
  accumulate<<<blocks, threads, 0, s1>>>(z, acc, kN);              // acc += z
  CK(cudaGetLastError());

  cudaStreamCaptureStatus status;
  unsigned long long id = 0;
  CK(cudaStreamGetCaptureInfo(s1, &status, &id));
  printf("capturing: %s\n", status == cudaStreamCaptureStatusActive ? "active" : "not active");
  cudaGraph_t graph;
  CK(cudaStreamEndCapture(s1, &graph));
  CK(cudaStreamIsCapturing(s1, &status));
  printf("after end: %s\n", status == cudaStreamCaptureStatusNone ? "not capturing" : "capturing");

  size_t nodes = 0;
  CK(cudaGraphGetNodes(graph, nullptr, &nodes));
  printf("graph nodes: %zu\n", nodes);
  std::vector<float> h(kN);
  CK(cudaMemcpy(h.data(), z, bytes, cudaMemcpyDeviceToHost));
  bool idle = true;
  for (int i = 0; i < kN; ++i) idle = idle && h[i] == 0.0f;
  printf("ran while capturing: %s\n", idle ? "no" : "yes");

  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < kLaunches; ++i) CK(cudaGraphLaunch(exec, s1));
  CK(cudaStreamSynchronize(s1));
  CK(cudaMemcpy(h.data(), acc, bytes, cudaMemcpyDeviceToHost));
  int bad = 0;
  double sum = 0;
  for (int i = 0; i < kN; ++i) {
    const float want = kLaunches * 2.0f * (1.0f + i % 7);
    if (h[i] != want) ++bad;
    sum += h[i];
  }
  printf("acc checksum: %.1f, mismatches: %d\n", sum, bad);

  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(graph));
  CK(cudaEventDestroy(fork));
  CK(cudaEventDestroy(join));
  CK(cudaStreamDestroy(s1));
  CK(cudaStreamDestroy(s2));
  for (float* p : {x, y, z, acc}) CK(cudaFree(p));
  const bool ok = bad == 0 && idle && nodes == 5 && status == cudaStreamCaptureStatusNone;
  printf("RESULT %s %s %d launches of a %zu-node captured graph\n", NAME, ok ? "PASS" : "FAIL",
         kLaunches, nodes);
  return ok ? 0 : 1;
}
