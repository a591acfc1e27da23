// vmm_alloc: cudaMalloc of 2 MiB multiples (which scuda places itself and
// maps one-way) and of small sizes (which wait for the server), written and
// read by kernels and copies; address ranges and pointer attributes as the
// program asked for them; frees and reallocations; running out of memory
// reported by cudaMalloc itself, with nothing failing later, and the retry
// after freeing succeeding, as PyTorch's caching allocator relies on.
// nvcc: -lcuda
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <vector>

#define NAME "vmm_alloc"
#include "check.h"

#define CU(call)                                                    \
  do {                                                              \
    CUresult r_ = (call);                                           \
    if (r_ != CUDA_SUCCESS) {                                       \
      const char* n_ = "?";                                         \
      cuGetErrorName(r_, &n_);                                      \
      printf("RESULT %s FAIL %s at line %d\n", NAME, n_, __LINE__); \
      exit(1);                                                      \
    }                                                               \
  } while (0)

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kGiB = size_t{1} << 30;

__global__ void fill(unsigned* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x)
    p[i] = seed ^ static_cast<unsigned>(i * 2654435761u);
}

static int failures = 0;

static void check(const char* what, bool ok) {
  if (!ok) ++failures;
  printf("%-52s %s\n", what, ok ? "ok" : "MISMATCH");
}

// Fills the buffer on the device, copies it to a second one, reads that
// back and checks every word.
static bool round_trip(unsigned* p, size_t bytes, unsigned seed) {
  const size_t n = bytes / sizeof(unsigned);
  fill<<<256, 256>>>(p, n, seed);
  CK(cudaGetLastError());
  unsigned* copy = nullptr;
  CK(cudaMalloc(&copy, bytes));
  CK(cudaMemcpy(copy, p, bytes, cudaMemcpyDeviceToDevice));
  std::vector<unsigned> host(n);
  CK(cudaMemcpy(host.data(), copy, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
  CK(cudaFree(copy));
  for (size_t i = 0; i < n; ++i)
    if (host[i] != (seed ^ static_cast<unsigned>(i * 2654435761u))) return false;
  return true;
}

static void describe(const char* label, void* ptr, size_t size) {
  const CUdeviceptr p = reinterpret_cast<CUdeviceptr>(ptr);
  CUdeviceptr base = 0;
  size_t range = 0;
  CU(cuMemGetAddressRange(&base, &range, p + size / 2));
  printf("%-10s range size %zu, base == ptr: %d\n", label, range, base == p);
  cudaPointerAttributes a{};
  CK(cudaPointerGetAttributes(&a, ptr));
  size_t attr_size = 0;
  CU(cuPointerGetAttribute(&attr_size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, p));
  CUdeviceptr attr_start = 0;
  CU(cuPointerGetAttribute(&attr_start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p + size - 1));
  printf("%-10s type %d, device %d, attribute range size %zu, start == ptr: %d\n", label,
         static_cast<int>(a.type), a.device, attr_size, attr_start == p);
}

int main() {
  CK(cudaSetDevice(0));
  const size_t sizes[] = {2 * kMiB, 6 * kMiB, 20 * kMiB, 64 * kMiB + 4, 256, 4096, 100 * 1024};
  const char* labels[] = {"2MiB", "6MiB", "20MiB", "64MiB+4", "256B", "4KiB", "100KiB"};
  constexpr int kCount = sizeof sizes / sizeof sizes[0];
  void* bufs[kCount];
  for (int i = 0; i < kCount; ++i) CK(cudaMalloc(&bufs[i], sizes[i]));
  for (int i = 0; i < kCount; ++i) {
    char what[64];
    snprintf(what, sizeof what, "%s written and read back", labels[i]);
    check(what, round_trip(static_cast<unsigned*>(bufs[i]), sizes[i], 0x1234u + i));
    describe(labels[i], bufs[i], sizes[i]);
  }

  // Free and reallocate, many times: the memory works each time.
  bool reused = true;
  for (int round = 0; round < 20; ++round) {
    CK(cudaFree(bufs[1]));
    CK(cudaMalloc(&bufs[1], sizes[1]));
    reused = reused && round_trip(static_cast<unsigned*>(bufs[1]), sizes[1], round);
  }
  check("6MiB freed and reallocated 20 times", reused);
  check("other buffers untouched", round_trip(static_cast<unsigned*>(bufs[2]), sizes[2], 7));

  // cudaMemGetInfo sees a large allocation at once.
  size_t free_before = 0, free_after = 0, total = 0;
  CK(cudaMemGetInfo(&free_before, &total));
  void* large = nullptr;
  CK(cudaMalloc(&large, kGiB));
  CK(cudaMemGetInfo(&free_after, &total));
  check("cudaMemGetInfo drops by the allocation", free_before - free_after >= kGiB);
  check("1GiB written and read back", round_trip(static_cast<unsigned*>(large), 64 * kMiB, 99));
  CK(cudaFree(large));

  // More than the device has: cudaMalloc itself says so.
  void* too_big = nullptr;
  cudaError_t e = cudaMalloc(&too_big, 2 * total);
  printf("cudaMalloc(2 x total memory): %s\n", cudaGetErrorName(e));
  cudaGetLastError();

  // Fill the device 1 GiB at a time until cudaMalloc fails; nothing may
  // fail later (no error comes back at the synchronization), and after
  // freeing the same allocation succeeds and works.
  std::vector<void*> chunks;
  for (;;) {
    void* c = nullptr;
    e = cudaMalloc(&c, kGiB);
    if (e != cudaSuccess) break;
    chunks.push_back(c);
  }
  printf("filling the device ends with: %s\n", cudaGetErrorName(e));
  cudaGetLastError();
  check("filled more than half the device", chunks.size() * kGiB > total / 2);
  check("nothing failed after the fact", cudaDeviceSynchronize() == cudaSuccess);
  check("filled at least two chunks", chunks.size() >= 2);
  CK(cudaFree(chunks.back()));
  chunks.pop_back();
  CK(cudaFree(chunks.back()));  // room for round_trip's copy too
  CK(cudaMalloc(&chunks.back(), kGiB));
  check("the retry after a free works",
        round_trip(static_cast<unsigned*>(chunks.back()), 64 * kMiB, 5));
  for (void* c : chunks) CK(cudaFree(c));
  check("synchronized after freeing", cudaDeviceSynchronize() == cudaSuccess);

  for (int i = 0; i < kCount; ++i) CK(cudaFree(bufs[i]));
  printf("RESULT %s %s %d mismatches\n", NAME, failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
