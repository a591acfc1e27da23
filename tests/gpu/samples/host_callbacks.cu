// Host callbacks: cudaLaunchHostFunc and cudaStreamAddCallback on three
// streams run in each stream's order, after the work queued before them
// (a callback sees the result of the async copy queued just ahead of it,
// each step copying into a slot of its own), and before the work queued
// after them (the next step's slot is still zero when the callback looks).
#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "check.h"

#define NAME "host_callbacks"

constexpr int kStreams = 3, kSteps = 4, kN = 1 << 16;

__global__ void add(int* p, int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] += v;
}

struct Step {
  std::vector<std::string>* log;
  int stream, step;
  const int* host;  // the copy queued before this callback
};

std::atomic<int> early{0};  // callbacks that saw the copy queued after them done

void CUDART_CB host_func(void* p) {
  Step* s = static_cast<Step*>(p);
  std::string line = "stream " + std::to_string(s->stream) + " step " + std::to_string(s->step) +
                     " sees " + std::to_string(s->host[kN - 1]);
  if (s->step + 1 < kSteps) {
    line += ", next slot " + std::to_string(s->host[kN + kN - 1]);
    early += s->host[kN + kN - 1] != 0;
  }
  s->log->push_back(line);
}

void CUDART_CB stream_callback(cudaStream_t, cudaError_t status, void* p) {
  Step* s = static_cast<Step*>(p);
  s->log->push_back("stream " + std::to_string(s->stream) + " callback after step " +
                    std::to_string(s->step) + " status " + cudaGetErrorName(status));
}

int main() {
  cudaStream_t streams[kStreams];
  int* dev[kStreams];
  int* host[kStreams];
  std::vector<std::string> logs[kStreams];
  std::vector<Step> steps(kStreams * kSteps);
  for (int s = 0; s < kStreams; ++s) {
    CK(cudaStreamCreate(&streams[s]));
    CK(cudaMalloc(&dev[s], kN * sizeof(int)));
    CK(cudaMallocHost(&host[s], kSteps * kN * sizeof(int)));
    std::memset(host[s], 0, kSteps * kN * sizeof(int));
    CK(cudaMemsetAsync(dev[s], 0, kN * sizeof(int), streams[s]));
  }
  for (int k = 0; k < kSteps; ++k)
    for (int s = 0; s < kStreams; ++s) {
      Step& st = steps[k * kStreams + s];
      st = {&logs[s], s, k, host[s] + k * kN};
      add<<<(kN + 255) / 256, 256, 0, streams[s]>>>(dev[s], s * 10 + k + 1, kN);
      CK(cudaMemcpyAsync(host[s] + k * kN, dev[s], kN * sizeof(int), cudaMemcpyDeviceToHost,
                         streams[s]));
      CK(cudaLaunchHostFunc(streams[s], host_func, &st));
      CK(cudaStreamAddCallback(streams[s], stream_callback, &st, 0));
    }
  CK(cudaDeviceSynchronize());
  int total = 0;
  for (int s = 0; s < kStreams; ++s) {
    for (const std::string& line : logs[s]) printf("%s\n", line.c_str());
    total += static_cast<int>(logs[s].size());
    CK(cudaFreeHost(host[s]));
    CK(cudaFree(dev[s]));
    CK(cudaStreamDestroy(streams[s]));
  }
  const bool ok = total == 2 * kStreams * kSteps && early == 0;
  printf("RESULT %s %s %d callbacks\n", NAME, ok ? "PASS" : "FAIL", total);
  return ok ? 0 : 1;
}
