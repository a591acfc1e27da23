// multi_gpu_peer: needs two GPUs (fewer is a FAIL, never a skip). cudaMalloc
// on each device, cudaMemcpyPeer both ways compared by FNV-1a 64 checksums,
// cudaDeviceEnablePeerAccess and a kernel on device 1 that reads device 0's
// memory directly, and cudaMemcpyPeer's bandwidth for 256 MiB each way
// (printed on `# ` lines, which may differ between runs).
// Not in run.sh's list, which also runs on one-GPU machines; tests/gpu/README.md
// ("Two GPUs") says how to run it natively and through scuda.
#include <cuda_runtime.h>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#define NAME "multi_gpu_peer"
#include "check.h"
#include "fill_hash.h"

// out[i] = peer[i] * 3 + 1, with `peer` in another device's memory.
__global__ void read_peer(const uint32_t* peer, uint32_t* out, size_t n) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    out[i] = peer[i] * 3u + 1u;
}

static bool fail(const char* what) {
  printf("RESULT %s FAIL %s\n", NAME, what);
  return false;
}

// 64 MiB from device 0 to device 1 and back, each compared with the source.
static bool copies_both_ways() {
  const size_t n = 64u << 20;
  std::vector<unsigned char> src(n), back(n);
  fill(src.data(), n, 42);
  void *on0 = nullptr, *on1 = nullptr, *again0 = nullptr;
  CK(cudaSetDevice(0));
  CK(cudaMalloc(&on0, n));
  CK(cudaMalloc(&again0, n));
  CK(cudaMemcpy(on0, src.data(), n, cudaMemcpyHostToDevice));
  CK(cudaSetDevice(1));
  CK(cudaMalloc(&on1, n));
  CK(cudaMemcpyPeer(on1, 1, on0, 0, n));
  CK(cudaMemcpy(back.data(), on1, n, cudaMemcpyDeviceToHost));
  const uint64_t want = fnv1a(src.data(), n), got01 = fnv1a(back.data(), n);
  printf("peer 0->1: %zu bytes, fnv1a %016llx, %s\n", n, (unsigned long long)got01,
         got01 == want ? "match" : "MISMATCH");
  CK(cudaMemset(on1, 0x5a, 4096));
  memset(src.data(), 0x5a, 4096);
  CK(cudaMemcpyPeerAsync(again0, 0, on1, 1, n, 0));
  CK(cudaDeviceSynchronize());
  CK(cudaSetDevice(0));
  CK(cudaMemcpy(back.data(), again0, n, cudaMemcpyDeviceToHost));
  const uint64_t want10 = fnv1a(src.data(), n), got10 = fnv1a(back.data(), n);
  printf("peer 1->0: %zu bytes, fnv1a %016llx, %s\n", n, (unsigned long long)got10,
         got10 == want10 ? "match" : "MISMATCH");
  CK(cudaFree(on0));
  CK(cudaFree(again0));
  CK(cudaSetDevice(1));
  CK(cudaFree(on1));
  if (got01 != want) return fail("peer copy 0->1 changed the bytes");
  if (got10 != want10) return fail("peer copy 1->0 changed the bytes");
  return true;
}

// A kernel on device 1 reads device 0's memory through peer access.
static bool kernel_reads_peer() {
  int can = 0;
  CK(cudaDeviceCanAccessPeer(&can, 1, 0));
  printf("device 1 can access device 0: %d\n", can);
  if (!can) return fail("device 1 cannot access device 0's memory");
  const size_t n = 1 << 22;
  std::vector<uint32_t> host(n), out(n);
  for (size_t i = 0; i < n; ++i) host[i] = (uint32_t)(i * 2654435761u);
  uint32_t *on0 = nullptr, *on1 = nullptr;
  CK(cudaSetDevice(0));
  CK(cudaMalloc(&on0, n * 4));
  CK(cudaMemcpy(on0, host.data(), n * 4, cudaMemcpyHostToDevice));
  CK(cudaSetDevice(1));
  CK(cudaDeviceEnablePeerAccess(0, 0));
  CK(cudaMalloc(&on1, n * 4));
  read_peer<<<256, 256>>>(on0, on1, n);
  CK(cudaGetLastError());
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(out.data(), on1, n * 4, cudaMemcpyDeviceToHost));
  size_t wrong = 0;
  for (size_t i = 0; i < n; ++i) wrong += out[i] != host[i] * 3u + 1u;
  printf("kernel on device 1 read device 0: %zu of %zu words wrong\n", wrong, n);
  CK(cudaFree(on1));
  CK(cudaDeviceDisablePeerAccess(0));
  CK(cudaSetDevice(0));
  CK(cudaFree(on0));
  return wrong == 0 || fail("the kernel on device 1 read wrong values from device 0");
}

// cudaMemcpyPeer of 256 MiB each way, with peer access enabled both ways:
// the best of five, after a warm-up.
static void bandwidth() {
  const size_t n = 256u << 20;
  void *on0 = nullptr, *on1 = nullptr;
  CK(cudaSetDevice(1));
  CK(cudaDeviceEnablePeerAccess(0, 0));
  CK(cudaSetDevice(0));
  CK(cudaDeviceEnablePeerAccess(1, 0));
  CK(cudaMalloc(&on0, n));
  CK(cudaMemset(on0, 1, n));
  CK(cudaSetDevice(1));
  CK(cudaMalloc(&on1, n));
  CK(cudaMemset(on1, 2, n));
  for (int way = 0; way < 2; ++way) {
    double best = 1e30;
    for (int i = 0; i < 6; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      if (way == 0) CK(cudaMemcpyPeer(on1, 1, on0, 0, n));
      else CK(cudaMemcpyPeer(on0, 0, on1, 1, n));
      CK(cudaDeviceSynchronize());
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (i > 0 && s < best) best = s;
    }
    printf("# cudaMemcpyPeer %s 256 MiB: %.3f ms, %.1f GB/s\n", way == 0 ? "0->1" : "1->0",
           best * 1e3, n / best / 1e9);
  }
  CK(cudaFree(on1));
  CK(cudaSetDevice(0));
  CK(cudaFree(on0));
}

int main() {
  int count = 0;
  if (cudaError_t e = cudaGetDeviceCount(&count); e != cudaSuccess) {
    fprintf(stderr, "cudaGetDeviceCount: %s\n", cudaGetErrorName(e));
    count = 0;
  }
  printf("devices: %d\n", count);
  if (count < 2) {
    printf("RESULT %s FAIL needs 2 GPUs\n", NAME);
    return 1;
  }
  for (int dev = 0; dev < 2; ++dev) {
    cudaDeviceProp p;
    CK(cudaGetDeviceProperties(&p, dev));
    printf("device %d: %s, %.1f GiB, PCI %04x:%02x:%02x\n", dev, p.name,
           p.totalGlobalMem / double(1 << 30), p.pciDomainID, p.pciBusID, p.pciDeviceID);
  }
  if (!copies_both_ways() || !kernel_reads_peer()) return 1;
  bandwidth();
  printf("RESULT %s PASS peer copies both ways match, a kernel on device 1 read device 0\n", NAME);
  return 0;
}
