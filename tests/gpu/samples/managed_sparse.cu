// Sparse touches of a large managed buffer: 1 GiB, of which the host writes
// one word in every 64th page, a kernel updates those words and the host
// checks them. Through scuda only the touched pages should cross the network
// (tests/gpu/run.sh reads the bytes moved from scuda's stats).
#define NAME "managed_sparse"
#include "check.h"

#include <unistd.h>

__global__ void update(unsigned* words, size_t stride, int count) {
  int k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k < count) words[k * stride] = words[k * stride] * 3 + 1;
}

int main() {
  const size_t bytes = size_t{1} << 30;
  const size_t stride = 64 * static_cast<size_t>(sysconf(_SC_PAGESIZE)) / sizeof(unsigned);
  const int count = static_cast<int>(bytes / sizeof(unsigned) / stride);
  unsigned* words;
  CK(cudaMallocManaged(&words, bytes));
  for (int k = 0; k < count; ++k) words[k * stride] = k;
  update<<<(count + 255) / 256, 256>>>(words, stride, count);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  int wrong = 0;
  unsigned long long sum = 0;
  for (int k = 0; k < count; ++k) {
    if (words[k * stride] != 3u * k + 1) ++wrong;
    sum += words[k * stride];
  }
  CK(cudaFree(words));
  printf("touched %d words, one per %zu bytes, sum %llu\n", count, stride * sizeof(unsigned), sum);
  printf("RESULT %s %s touched=%d wrong=%d\n", NAME, wrong ? "FAIL" : "PASS", count, wrong);
  return wrong ? 1 : 0;
}
