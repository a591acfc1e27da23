// fault_copy MIB SECONDS: copies MIB MiB host to device and back, over and
// over, for SECONDS; the target of tests/gpu/faults.sh's kill -9 test. After
// the first round trip, checked, it prints "ready pid=N copy_ms=M" (M: one
// round trip), so that a kill can be aimed at a moment in a copy.
#include <unistd.h>

#include <cuda_runtime.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#define NAME "fault_copy"
#include "check.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: fault_copy MIB SECONDS\n");
    return 2;
  }
  const size_t n = strtoull(argv[1], nullptr, 10) << 20;
  const double seconds = atof(argv[2]);
  unsigned char* host = (unsigned char*)malloc(n);
  if (!host || n < 2) {
    printf("RESULT %s FAIL cannot allocate %zu host bytes\n", NAME, n);
    return 1;
  }
  memset(host, 0x5A, n);
  unsigned char* dev;
  CK(cudaMalloc(&dev, n));
  auto t0 = std::chrono::steady_clock::now();
  auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  long rounds = 0;
  do {
    auto r0 = std::chrono::steady_clock::now();
    CK(cudaMemcpy(dev, host, n, cudaMemcpyHostToDevice));
    host[0] = host[n - 1] = 0;
    CK(cudaMemcpy(host, dev, n, cudaMemcpyDeviceToHost));
    if (host[0] != 0x5A || host[n - 1] != 0x5A) {
      printf("RESULT %s FAIL the copy came back wrong\n", NAME);
      return 1;
    }
    if (rounds++ == 0) {
      printf("ready pid=%d copy_ms=%.0f\n", (int)getpid(), 1000 * since(r0));
      fflush(stdout);
    }
  } while (since(t0) < seconds);
  CK(cudaFree(dev));
  printf("RESULT %s PASS rounds=%ld of %zu bytes each way\n", NAME, rounds, n);
  return 0;
}
