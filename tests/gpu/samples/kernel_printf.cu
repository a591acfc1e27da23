// printf from kernels: the lines reach the program's stdout at the next
// synchronization, in launch order, between the host's own (flushed) lines.
#include <cstdio>

#include "check.h"

#define NAME "kernel_printf"

__global__ void say(int round, int value) {
  printf("kernel round %d: value %d, %s\n", round, value, value % 2 ? "odd" : "even");
}

__global__ void count(int n) {
  if (threadIdx.x == 0 && blockIdx.x == 0)
    for (int i = 0; i < n; ++i) printf("count %d of %d\n", i + 1, n);
}

int main() {
  for (int round = 0; round < 3; ++round) {
    printf("host before round %d\n", round);
    fflush(stdout);
    say<<<1, 1>>>(round, round * 7);
    count<<<4, 32>>>(round + 2);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    printf("host after round %d\n", round);
    fflush(stdout);
  }
  printf("RESULT %s PASS 3 rounds of kernel printf\n", NAME);
  return 0;
}
