// fault_load SECONDS SEED: mixed CUDA work for SECONDS, every result checked
// on the host, for the load and fault tests (tests/gpu/faults.sh). Picks at
// random among: allocations of 1 B to 32 MiB (each memset and read back),
// frees, H2D/D2D/D2H round trips compared by FNV-1a, the vadd/scale/fill
// kernels against the host's answers, two streams ordered by an event over
// pinned memory, and now and then a device synchronize with cudaMemGetInfo.
// Prints "ready pid=N" once its first allocation is checked, then a last
// line `RESULT fault_load PASS|FAIL ops=N errors=N bytes=N`. A CUDA error
// ends it at once (check.h); a wrong result counts as an error and it goes
// on. SCUDA_FAULTS_DOUBLE=1, for a dry run on the driver test double,
// leaves out what the double lacks: compiled kernels, and
// cudaDeviceSynchronize (a stream synchronize instead).
#include <unistd.h>

#include <cuda_runtime.h>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define NAME "fault_load"
#include "check.h"
#include "fault_common.h"

// Grid-stride loops: every i < n is done whatever the grid.
__global__ void vadd(const float* a, const float* b, float* c, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    c[i] = a[i] + b[i];
}
__global__ void scale(float* p, float s, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] *= s;
}
__global__ void fill(unsigned* p, unsigned v, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = v;
}

namespace {

const int kMaxLive = 12;
const int kBlocks = 256, kThreads = 256;

struct Live {
  unsigned char* p;
  size_t n;
};

struct Load {
  Rng rng;
  bool kernels;  // false on the driver test double
  std::vector<Live> live;
  unsigned long long ops = 0, errors = 0, bytes = 0;

  // Counts a wrong result and says where.
  void wrong(const char* what, size_t n) {
    ++errors;
    fprintf(stderr, "fault_load: %s of %zu bytes came back wrong (op %llu)\n", what, n, ops);
  }

  // Up to 32 MiB, most much smaller: sizes spread over every power of two.
  size_t any_size(int max_shift) {
    return 1 + rng.next() % (size_t(1) << (rng.next() % max_shift));
  }

  // Allocates, memsets and reads back a piece; frees one first at the cap.
  void alloc() {
    if ((int)live.size() >= kMaxLive) free_one();
    Live a{nullptr, any_size(25)};
    CK(cudaMalloc(&a.p, a.n));
    unsigned char v = (unsigned char)rng.next();
    CK(cudaMemset(a.p, v, a.n));
    size_t k = a.n < 4096 ? a.n : 4096, off = rng.next() % (a.n - k + 1);
    std::vector<unsigned char> back(k);
    CK(cudaMemcpy(back.data(), a.p + off, k, cudaMemcpyDeviceToHost));
    for (unsigned char b : back)
      if (b != v) {
        wrong("memset", a.n);
        break;
      }
    live.push_back(a);
    bytes += k;
  }

  void free_one() {
    if (live.empty()) return;
    size_t i = rng.next() % live.size();
    CK(cudaFree(live[i].p));
    live[i] = live.back();
    live.pop_back();
  }

  // H2D, D2D, D2H of random bytes, compared by checksum.
  void round_trip() {
    size_t n = any_size(24);
    std::vector<unsigned char> src(n), back(n);
    fill_bytes(src.data(), n, rng.next());
    unsigned char *d1, *d2;
    CK(cudaMalloc(&d1, n));
    CK(cudaMalloc(&d2, n));
    CK(cudaMemcpy(d1, src.data(), n, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(d2, d1, n, cudaMemcpyDeviceToDevice));
    CK(cudaMemcpy(back.data(), d2, n, cudaMemcpyDeviceToHost));
    CK(cudaFree(d1));
    CK(cudaFree(d2));
    if (fnv1a(src.data(), n) != fnv1a(back.data(), n)) wrong("H2D/D2D/D2H round trip", n);
    bytes += 3 * n;
  }

  // c = a + b on the device against the host's sums.
  void add() {
    int n = 1 + (int)(rng.next() % (1 << 20));
    size_t b = n * sizeof(float);
    std::vector<float> x(n), y(n), z(n), want(n);
    fill_floats(x.data(), n, rng.next());
    fill_floats(y.data(), n, rng.next());
    for (int i = 0; i < n; ++i) want[i] = x[i] + y[i];
    float *dx, *dy, *dz;
    CK(cudaMalloc(&dx, b));
    CK(cudaMalloc(&dy, b));
    CK(cudaMalloc(&dz, b));
    CK(cudaMemcpy(dx, x.data(), b, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(dy, y.data(), b, cudaMemcpyHostToDevice));
    vadd<<<kBlocks, kThreads>>>(dx, dy, dz, n);
    CK(cudaGetLastError());
    CK(cudaMemcpy(z.data(), dz, b, cudaMemcpyDeviceToHost));
    CK(cudaFree(dx));
    CK(cudaFree(dy));
    CK(cudaFree(dz));
    if (memcmp(z.data(), want.data(), b)) wrong("vadd", b);
    bytes += 3 * b;
  }

  // Two streams: s1 copies in and records an event, s2 waits for it,
  // scales and copies out, through pinned buffers.
  void streams() {
    int n = 1 + (int)(rng.next() % (1 << 21));
    size_t b = n * sizeof(float);
    float s = kernels ? 0.5f + (float)(rng.next() % 8) : 1.0f;
    float *h_in, *h_out, *d;
    cudaStream_t s1, s2;
    cudaEvent_t copied, done;
    CK(cudaMallocHost(&h_in, b));
    CK(cudaMallocHost(&h_out, b));
    CK(cudaMalloc(&d, b));
    CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
    CK(cudaEventCreateWithFlags(&copied, cudaEventDisableTiming));
    CK(cudaEventCreate(&done));
    fill_floats(h_in, n, rng.next());
    CK(cudaMemcpyAsync(d, h_in, b, cudaMemcpyHostToDevice, s1));
    CK(cudaEventRecord(copied, s1));
    CK(cudaStreamWaitEvent(s2, copied, 0));
    if (kernels) scale<<<kBlocks, kThreads, 0, s2>>>(d, s, n);
    CK(cudaGetLastError());
    CK(cudaMemcpyAsync(h_out, d, b, cudaMemcpyDeviceToHost, s2));
    CK(cudaEventRecord(done, s2));
    CK(cudaEventSynchronize(done));
    for (int i = 0; i < n; ++i)
      if (h_out[i] != h_in[i] * s) {
        wrong("two-stream scale", b);
        break;
      }
    CK(cudaEventDestroy(copied));
    CK(cudaEventDestroy(done));
    CK(cudaStreamDestroy(s1));
    CK(cudaStreamDestroy(s2));
    CK(cudaFree(d));
    CK(cudaFreeHost(h_in));
    CK(cudaFreeHost(h_out));
    bytes += 2 * b;
  }

  // fill kernel into one of the live allocations, read back.
  void fill_live() {
    if (live.empty()) return alloc();
    Live& a = live[rng.next() % live.size()];
    int n = (int)(a.n / sizeof(unsigned));
    if (n == 0) return;
    unsigned v = (unsigned)rng.next();
    fill<<<kBlocks, kThreads>>>((unsigned*)a.p, v, n);
    CK(cudaGetLastError());
    std::vector<unsigned> back(n);
    CK(cudaMemcpy(back.data(), a.p, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    for (unsigned x : back)
      if (x != v) {
        wrong("fill", a.n);
        break;
      }
    bytes += a.n;
  }

  void synchronize() {
    size_t free_b = 0, total_b = 0;
    CK(kernels ? cudaDeviceSynchronize() : cudaStreamSynchronize(0));
    CK(cudaMemGetInfo(&free_b, &total_b));
    if (free_b > total_b) wrong("cudaMemGetInfo", 0);
  }

  void one_op() {
    switch (rng.next() % 16) {
      case 0:
      case 1:
      case 2: alloc(); break;
      case 3:
      case 4: free_one(); break;
      case 5:
      case 6:
      case 7: round_trip(); break;
      case 8:
      case 9: kernels ? add() : round_trip(); break;
      case 10:
      case 11: streams(); break;
      case 12:
      case 13:
      case 14: kernels ? fill_live() : alloc(); break;
      default: synchronize(); break;
    }
    ++ops;
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: fault_load SECONDS SEED\n");
    return 2;
  }
  const double seconds = atof(argv[1]);
  const char* on_double = getenv("SCUDA_FAULTS_DOUBLE");
  Load load{Rng(strtoull(argv[2], nullptr, 10)), !(on_double && *on_double == '1')};
  auto t0 = std::chrono::steady_clock::now();
  load.alloc();
  printf("ready pid=%d\n", (int)getpid());
  fflush(stdout);
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < seconds)
    load.one_op();
  while (!load.live.empty()) load.free_one();
  load.synchronize();
  printf("RESULT %s %s ops=%llu errors=%llu bytes=%llu\n", NAME, load.errors ? "FAIL" : "PASS",
         load.ops, load.errors, load.bytes);
  return load.errors ? 1 : 0;
}
