// memcpy_roundtrip: H2D (pageable), D2D, memset of a sub-range, D2H for
// several sizes, compared by FNV-1a 64 checksums; then an async round trip
// through pinned memory on a stream.
#include <cuda_runtime.h>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define NAME "memcpy_roundtrip"
#include "check.h"
#include "fill_hash.h"

static double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Returns true when everything that came back matches.
static bool roundtrip(size_t n) {
  std::vector<unsigned char> src(n), expect(n), back(n), back_src(n);
  fill(src.data(), n, n);
  // The memset covers [off, off+len): a middle chunk, at least one byte.
  size_t off = n / 4, len = n / 2 ? n / 2 : 1;
  expect = src;
  memset(expect.data() + off, 0xA5, len);

  auto t0 = std::chrono::steady_clock::now();
  unsigned char *d1, *d2;
  CK(cudaMalloc(&d1, n));
  CK(cudaMalloc(&d2, n));
  CK(cudaMemcpy(d1, src.data(), n, cudaMemcpyHostToDevice));
  CK(cudaMemcpy(d2, d1, n, cudaMemcpyDeviceToDevice));
  CK(cudaMemset(d2 + off, 0xA5, len));
  CK(cudaMemcpy(back.data(), d2, n, cudaMemcpyDeviceToHost));
  CK(cudaMemcpy(back_src.data(), d1, n, cudaMemcpyDeviceToHost));
  CK(cudaFree(d1));
  CK(cudaFree(d2));
  double ms = ms_since(t0);

  uint64_t he = fnv1a(expect.data(), n), hb = fnv1a(back.data(), n);
  uint64_t hs = fnv1a(src.data(), n), hbs = fnv1a(back_src.data(), n);
  bool ok = he == hb && hs == hbs;
  printf(
      "size=%zu memset=[%zu,+%zu) fnv_expect=%016llx fnv_back=%016llx "
      "src_intact=%s %.1f ms %s\n",
      n, off, len, (unsigned long long)he, (unsigned long long)hb, hs == hbs ? "yes" : "no", ms,
      ok ? "ok" : "MISMATCH");
  return ok;
}

static bool async_pinned(size_t n) {
  unsigned char *h_in, *h_out, *d;
  cudaStream_t s;
  CK(cudaMallocHost(&h_in, n));
  CK(cudaMallocHost(&h_out, n));
  CK(cudaMalloc(&d, n));
  CK(cudaStreamCreate(&s));
  fill(h_in, n, 42);
  memset(h_out, 0, n);
  auto t0 = std::chrono::steady_clock::now();
  CK(cudaMemcpyAsync(d, h_in, n, cudaMemcpyHostToDevice, s));
  CK(cudaMemsetAsync(d, 0x3C, 4096, s));
  CK(cudaMemcpyAsync(h_out, d, n, cudaMemcpyDeviceToHost, s));
  CK(cudaStreamSynchronize(s));
  double ms = ms_since(t0);
  memset(h_in, 0x3C, 4096);
  uint64_t he = fnv1a(h_in, n), hb = fnv1a(h_out, n);
  bool ok = he == hb;
  printf(
      "async pinned size=%zu fnv_expect=%016llx fnv_back=%016llx %.1f ms "
      "%s\n",
      n, (unsigned long long)he, (unsigned long long)hb, ms, ok ? "ok" : "MISMATCH");
  CK(cudaStreamDestroy(s));
  CK(cudaFree(d));
  CK(cudaFreeHost(h_in));
  CK(cudaFreeHost(h_out));
  return ok;
}

int main() {
  const size_t sizes[] = {1, 3, 4096, (1u << 20) + 7, 64u << 20, 256u << 20};
  int bad = 0;
  for (size_t n : sizes) bad += !roundtrip(n);
  bad += !async_pinned(16u << 20);
  if (bad) {
    printf("RESULT %s FAIL %d of 7 checks mismatched\n", NAME, bad);
    return 1;
  }
  printf("RESULT %s PASS 6 sizes up to 256 MiB + async pinned 16 MiB\n", NAME);
  return 0;
}
