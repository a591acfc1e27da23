// Where a host's sequential read of managed memory after device work spends
// its time: the same buffer written by the device (cudaMemset), synchronized,
// then read on the host, round after round; beside it the same read after a
// prefetch to the host, and a plain cudaMemcpy to pageable memory of the same
// size; what freeing the managed buffer costs; and the other way, the host
// writing the buffer and a device copy reading it. Run natively and through scuda (with
// SCUDA_STATS=1, whose "managed:" rows split the fault service's time into transfers and mprotect
// calls):
//   nvcc -O2 -o /tmp/managed_read tests/gpu/diagnostics/managed_read.cu
//   /tmp/managed_read [MiB] [rounds] [copy-out]
// With copy-out, it only times copies out of device and managed memory
// into page-locked memory (what the server's pulls are made of).
// Figures: docs/bench/managed.md, "On the GPU host".
#include <cuda_runtime.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

void check(cudaError_t rc, const char* what) {
  if (rc == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(rc));
  std::exit(1);
}

double since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Sums the buffer as 8-byte words, so that every byte is read.
uint64_t sum(const void* p, size_t bytes) {
  const uint64_t* words = static_cast<const uint64_t*>(p);
  uint64_t s = 0;
  for (size_t i = 0; i < bytes / 8; ++i) s += words[i];
  return s;
}

void report(const char* what, int round, size_t bytes, double sync_s, double read_s) {
  std::printf("%-22s round %d: sync %.2f ms, read %.2f ms, %.2f GB/s\n", what, round, sync_s * 1e3,
              read_s * 1e3, bytes / read_s / 1e9);
}

// The device writes, the host reads; with `prefetch`, a prefetch to the
// host is asked before the synchronization.
void managed_rounds(size_t bytes, int rounds, bool prefetch) {
  void* p = nullptr;
  check(cudaMallocManaged(&p, bytes), "cudaMallocManaged");
  for (int r = 0; r < rounds; ++r) {
    check(cudaMemset(p, r + 1, bytes), "cudaMemset");
    if (prefetch) {
      cudaMemLocation host{};
      host.type = cudaMemLocationTypeHost;
      check(cudaMemPrefetchAsync(p, bytes, host, 0, nullptr), "cudaMemPrefetchAsync");
    }
    Clock::time_point start = Clock::now();
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    const double sync_s = since(start);
    start = Clock::now();
    const uint64_t s = sum(p, bytes);
    const double read_s = since(start);
    const uint64_t expect = (bytes / 8) * (0x0101010101010101ull * ((r + 1) & 0xff));
    if (s != expect) {
      std::printf("RESULT managed_read FAIL round %d sum %llx, expected %llx\n", r,
                  (unsigned long long)s, (unsigned long long)expect);
      std::exit(1);
    }
    report(prefetch ? "managed, prefetched" : "managed", r, bytes, sync_s, read_s);
  }
  const Clock::time_point start = Clock::now();
  check(cudaFree(p), "cudaFree");
  std::printf("%-22s cudaFree %.2f ms\n", prefetch ? "managed, prefetched" : "managed",
              since(start) * 1e3);
}

// The host writes the whole buffer, then a device copy reads it: the host's
// write and the copy (which waits for the bytes to reach the device) timed
// apart.
void push_rounds(size_t bytes, int rounds) {
  void* p = nullptr;
  void* d = nullptr;
  check(cudaMallocManaged(&p, bytes), "cudaMallocManaged");
  check(cudaMalloc(&d, bytes), "cudaMalloc");
  for (int r = 0; r < rounds; ++r) {
    Clock::time_point start = Clock::now();
    std::memset(p, r + 1, bytes);
    const double write_s = since(start);
    start = Clock::now();
    check(cudaMemcpy(d, p, bytes, cudaMemcpyDeviceToDevice), "cudaMemcpy");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    const double copy_s = since(start);
    std::printf("%-22s round %d: write %.2f ms, copy %.2f ms, %.2f GB/s\n", "managed push", r,
                write_s * 1e3, copy_s * 1e3, bytes / (write_s + copy_s) / 1e9);
  }
  check(cudaFree(d), "cudaFree");
  check(cudaFree(p), "cudaFree");
}

// A plain copy of the same size into pageable memory the host already
// touched: what the link gives a bulk transfer.
void copy_rounds(size_t bytes, int rounds) {
  void* d = nullptr;
  check(cudaMalloc(&d, bytes), "cudaMalloc");
  check(cudaMemset(d, 7, bytes), "cudaMemset");
  std::vector<uint8_t> host(bytes, 1);
  for (int r = 0; r < rounds; ++r) {
    const Clock::time_point start = Clock::now();
    check(cudaMemcpy(host.data(), d, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy");
    report("cudaMemcpy D2H", r, bytes, 0, since(start));
  }
  check(cudaFree(d), "cudaFree");
}

// Device memory copied out to page-locked host memory, the way the scuda
// server's staging does: from plain device memory, from managed memory the
// device just wrote, and from managed memory through a device buffer first.
void copy_out_rounds(size_t bytes, int rounds) {
  void *d = nullptr, *m = nullptr, *host = nullptr;
  check(cudaMalloc(&d, bytes), "cudaMalloc");
  check(cudaMallocManaged(&m, bytes), "cudaMallocManaged");
  check(cudaMallocHost(&host, bytes), "cudaMallocHost");
  auto timed = [&](const char* what, int r, auto copy) {
    check(cudaMemset(m, r + 1, bytes), "cudaMemset");
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    const Clock::time_point start = Clock::now();
    copy();
    check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    report(what, r, bytes, 0, since(start));
  };
  for (int r = 0; r < rounds; ++r) {
    timed("device -> pinned", r, [&] { cudaMemcpy(host, d, bytes, cudaMemcpyDeviceToHost); });
    timed("managed -> pinned", r, [&] { cudaMemcpy(host, m, bytes, cudaMemcpyDeviceToHost); });
    timed("managed -> dev -> pin", r, [&] {
      cudaMemcpy(d, m, bytes, cudaMemcpyDeviceToDevice);
      cudaMemcpy(host, d, bytes, cudaMemcpyDeviceToHost);
    });
  }
  check(cudaFreeHost(host), "cudaFreeHost");
  check(cudaFree(m), "cudaFree");
  check(cudaFree(d), "cudaFree");
}

}  // namespace

int main(int argc, char** argv) {
  const size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 1024;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  const size_t bytes = mib << 20;
  if (argc > 3 && std::strcmp(argv[3], "copy-out") == 0) {
    copy_out_rounds(bytes, rounds);
    return 0;
  }
  managed_rounds(bytes, rounds, false);
  managed_rounds(bytes, rounds, true);
  push_rounds(bytes, rounds);
  copy_rounds(bytes, rounds);
  std::printf("RESULT managed_read PASS %zu MiB x %d rounds\n", mib, rounds);
  return 0;
}
