// copies_2d3d: cudaMemcpy2D/3D between pageable and pinned host memory,
// pitched device memory and CUDA arrays, with offsets and partial widths,
// sync and async; a kernel touches the device copy in between. Every result
// is compared with what the host computes, and printed as an FNV-1a sum.
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#define NAME "copies_2d3d"
#include "check.h"
#include "fill_hash.h"

static int failures = 0;

static void report(const char* what, const std::vector<unsigned char>& got,
                   const std::vector<unsigned char>& want) {
  bool ok = got == want;
  if (!ok) ++failures;
  printf("%-28s bytes=%zu fnv=%016llx %s\n", what, got.size(),
         (unsigned long long)fnv1a(got.data(), got.size()), ok ? "ok" : "MISMATCH");
}

// Adds 1 to every byte of a width x height box of pitched memory.
__global__ void bump(unsigned char* p, size_t pitch, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < width && y < height) p[y * pitch + x] += 1;
}

// Pageable host -> pitched device -> kernel -> a sub-box back into a host
// buffer of another pitch, at an offset.
static void pitched_2d() {
  const int W = 1000, H = 77;  // bytes, rows
  const size_t hpitch = 1100, opitch = 1200;
  std::vector<unsigned char> src(hpitch * H), out(opitch * H, 0xCC), want(opitch * H, 0xCC);
  fill(src.data(), src.size(), 1);
  unsigned char* d;
  size_t dpitch;
  CK(cudaMallocPitch(&d, &dpitch, W, H));
  CK(cudaMemcpy2D(d, dpitch, src.data() + 3 * hpitch + 5, hpitch, W - 5, H - 3,
                  cudaMemcpyHostToDevice));
  bump<<<dim3((W + 255) / 256, H), 256>>>(d, dpitch, W - 5, H - 3);
  CK(cudaGetLastError());
  // Rows 2.. of the device box, columns 10..10+600, to (x=7, y=4) of out.
  CK(cudaMemcpy2D(out.data() + 4 * opitch + 7, opitch, d + 2 * dpitch + 10, dpitch, 600, 40,
                  cudaMemcpyDeviceToHost));
  for (int y = 0; y < 40; ++y)
    for (int x = 0; x < 600; ++x)
      want[(4 + y) * opitch + 7 + x] = (unsigned char)(src[(3 + 2 + y) * hpitch + 5 + 10 + x] + 1);
  report("2d pageable h2d/d2h", out, want);
  CK(cudaFree(d));
}

// Device to device between two pitched allocations, then more than one
// 8 MiB chunk's worth of rows, and rows longer than a chunk.
static void device_and_large_2d() {
  const int W = 6000, H = 2100;  // 12.6 MB of rows
  std::vector<unsigned char> src((size_t)W * H), out((size_t)W * H, 0);
  fill(src.data(), src.size(), 2);
  unsigned char *a, *b;
  size_t pa, pb;
  CK(cudaMallocPitch(&a, &pa, W, H));
  CK(cudaMallocPitch(&b, &pb, W, H));
  CK(cudaMemcpy2D(a, pa, src.data(), W, W, H, cudaMemcpyHostToDevice));
  CK(cudaMemset2D(b, pb, 0, W, H));
  CK(cudaMemcpy2D(b + 100 * pb + 64, pb, a + 100 * pa + 64, pa, W - 128, H - 200,
                  cudaMemcpyDeviceToDevice));
  CK(cudaMemcpy2D(out.data(), W, b, pb, W, H, cudaMemcpyDeviceToHost));
  std::vector<unsigned char> want((size_t)W * H, 0);
  for (int y = 100; y < H - 100; ++y)
    memcpy(&want[(size_t)y * W + 64], &src[(size_t)y * W + 64], W - 128);
  report("2d d2d + 12.6 MB rows", out, want);
  CK(cudaFree(a));
  CK(cudaFree(b));

  const size_t row = (9u << 20) + 17, rows = 3, pitch = row + 512;
  std::vector<unsigned char> wide(pitch * rows), back(pitch * rows, 0xEE);
  fill(wide.data(), wide.size(), 3);
  unsigned char* d;
  CK(cudaMalloc(&d, row * rows));
  CK(cudaMemcpy2D(d, row, wide.data(), pitch, row, rows, cudaMemcpyHostToDevice));
  CK(cudaMemcpy2D(back.data(), pitch, d, row, row, rows, cudaMemcpyDeviceToHost));
  std::vector<unsigned char> want_wide(pitch * rows, 0xEE);
  for (size_t y = 0; y < rows; ++y) memcpy(&want_wide[y * pitch], &wide[y * pitch], row);
  report("2d rows of 9 MiB", back, want_wide);
  CK(cudaFree(d));
}

// Host -> array at an offset, device -> array, array -> array, array -> host.
static void arrays_2d() {
  const int W = 64, H = 48;  // float elements
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
  cudaArray_t a, b;
  CK(cudaMallocArray(&a, &f, W, H));
  CK(cudaMallocArray(&b, &f, W, H));
  std::vector<float> src(W * H), zero(W * H, 0.0f);
  for (int i = 0; i < W * H; ++i) src[i] = i * 0.5f;
  CK(cudaMemcpy2DToArray(a, 0, 0, zero.data(), W * 4, W * 4, H, cudaMemcpyHostToDevice));
  CK(cudaMemcpy2DToArray(b, 0, 0, zero.data(), W * 4, W * 4, H, cudaMemcpyHostToDevice));
  // The host's rows 1.. columns 2.. into the array at (x=8 floats, y=5).
  CK(cudaMemcpy2DToArray(a, 8 * 4, 5, src.data() + W + 2, W * 4, 40 * 4, 30,
                         cudaMemcpyHostToDevice));
  CK(cudaMemcpy2DArrayToArray(b, 4 * 4, 2, a, 8 * 4, 5, 40 * 4, 30));
  float* d;
  size_t dp;
  CK(cudaMallocPitch(&d, &dp, W * 4, H));
  CK(cudaMemcpy2DFromArray(d, dp, b, 0, 0, W * 4, H, cudaMemcpyDeviceToDevice));
  CK(cudaMemcpy2DToArray(a, 0, 0, d, dp, W * 4, H, cudaMemcpyDeviceToDevice));
  std::vector<float> out(W * H, -1.0f);
  CK(cudaMemcpy2DFromArray(out.data(), W * 4, a, 0, 0, W * 4, H, cudaMemcpyDeviceToHost));
  std::vector<float> want(W * H, 0.0f);
  for (int y = 0; y < 30; ++y)
    for (int x = 0; x < 40; ++x) want[(2 + y) * W + 4 + x] = src[(1 + y) * W + 2 + x];
  std::vector<unsigned char> got_b(out.size() * 4), want_b(want.size() * 4);
  memcpy(got_b.data(), out.data(), got_b.size());
  memcpy(want_b.data(), want.data(), want_b.size());
  report("2d arrays h2a/a2a/a2d/d2a/a2h", got_b, want_b);
  CK(cudaFree(d));
  CK(cudaFreeArray(a));
  CK(cudaFreeArray(b));
}

// Adds z to every byte of an extent of a pitched 3D allocation.
__global__ void add_z(cudaPitchedPtr p, int width, int height, int depth) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y, z = blockIdx.z;
  if (x >= width || y >= height || z >= depth) return;
  unsigned char* row = (unsigned char*)p.ptr + (z * height + y) * p.pitch;
  row[x] += (unsigned char)z;
}

// A host box (with its own pitch and slice height) -> cudaMalloc3D at an
// offset -> kernel -> back; then the same through a 3D array.
static void three_d() {
  const int W = 90, H = 20, D = 7;      // the device extent (bytes, rows, slices)
  const int hw = 100, hh = 25, hd = 9;  // the host box
  std::vector<unsigned char> src((size_t)hw * hh * hd);
  fill(src.data(), src.size(), 4);
  cudaPitchedPtr dev;
  CK(cudaMalloc3D(&dev, make_cudaExtent(W, H, D)));
  CK(cudaMemset3D(dev, 0, make_cudaExtent(W, H, D)));
  cudaMemcpy3DParms up = {};
  up.srcPtr = make_cudaPitchedPtr(src.data(), hw, hw, hh);
  up.srcPos = make_cudaPos(3, 2, 1);
  up.dstPtr = dev;
  up.dstPos = make_cudaPos(5, 1, 2);
  up.extent = make_cudaExtent(60, 15, 4);
  up.kind = cudaMemcpyHostToDevice;
  CK(cudaMemcpy3D(&up));
  add_z<<<dim3(1, H, D), 128>>>(dev, W, H, D);
  CK(cudaGetLastError());
  std::vector<unsigned char> out((size_t)W * H * D, 0xCC), want((size_t)W * H * D, 0);
  cudaMemcpy3DParms down = {};
  down.srcPtr = dev;
  down.dstPtr = make_cudaPitchedPtr(out.data(), W, W, H);
  down.extent = make_cudaExtent(W, H, D);
  down.kind = cudaMemcpyDeviceToHost;
  CK(cudaMemcpy3D(&down));
  for (int z = 0; z < D; ++z)
    for (int y = 0; y < H; ++y)
      for (int x = 0; x < W; ++x) {
        bool in = z >= 2 && z < 6 && y >= 1 && y < 16 && x >= 5 && x < 65;
        unsigned char v = in ? src[((size_t)(z - 2 + 1) * hh + (y - 1 + 2)) * hw + (x - 5 + 3)] : 0;
        want[((size_t)z * H + y) * W + x] = (unsigned char)(v + z);
      }
  report("3d pageable h2d/d2h", out, want);

  // The device box into a 3D array at an offset, and out again whole.
  cudaChannelFormatDesc f = cudaCreateChannelDesc<unsigned char>();
  cudaArray_t arr;
  CK(cudaMalloc3DArray(&arr, &f, make_cudaExtent(W, H, D)));
  std::vector<unsigned char> zero((size_t)W * H * D, 0);
  cudaMemcpy3DParms clear = {};
  clear.srcPtr = make_cudaPitchedPtr(zero.data(), W, W, H);
  clear.dstArray = arr;
  clear.extent = make_cudaExtent(W, H, D);
  clear.kind = cudaMemcpyHostToDevice;
  CK(cudaMemcpy3D(&clear));
  cudaMemcpy3DParms to_array = {};
  to_array.srcPtr = dev;
  to_array.srcPos = make_cudaPos(5, 1, 2);
  to_array.dstArray = arr;
  to_array.dstPos = make_cudaPos(0, 3, 1);
  to_array.extent = make_cudaExtent(60, 15, 4);
  to_array.kind = cudaMemcpyDeviceToDevice;
  CK(cudaMemcpy3D(&to_array));
  std::vector<unsigned char> back((size_t)W * H * D, 0xCC), want_a((size_t)W * H * D, 0);
  cudaMemcpy3DParms from_array = {};
  from_array.srcArray = arr;
  from_array.dstPtr = make_cudaPitchedPtr(back.data(), W, W, H);
  from_array.extent = make_cudaExtent(W, H, D);
  from_array.kind = cudaMemcpyDeviceToHost;
  CK(cudaMemcpy3D(&from_array));
  for (int z = 0; z < 4; ++z)
    for (int y = 0; y < 15; ++y)
      for (int x = 0; x < 60; ++x)
        want_a[((size_t)(z + 1) * H + y + 3) * W + x] =
            want[((size_t)(z + 2) * H + y + 1) * W + x + 5];
  report("3d arrays d2a/a2h", back, want_a);
  CK(cudaFreeArray(arr));
  CK(cudaFree(dev.ptr));
}

// Async 2D/3D copies on a stream, from pinned and pageable memory.
static void async_copies() {
  const int W = 512, H = 300;
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  unsigned char *pinned, *pinned_out;
  CK(cudaMallocHost(&pinned, (size_t)W * H));
  CK(cudaMallocHost(&pinned_out, (size_t)W * H));
  fill(pinned, (size_t)W * H, 5);
  memset(pinned_out, 0, (size_t)W * H);
  unsigned char* d;
  size_t dp;
  CK(cudaMallocPitch(&d, &dp, W, H));
  CK(cudaMemcpy2DAsync(d, dp, pinned, W, W, H, cudaMemcpyHostToDevice, s));
  bump<<<dim3(2, H), 256, 0, s>>>(d, dp, W, H);
  CK(cudaGetLastError());
  CK(cudaMemcpy2DAsync(pinned_out, W, d, dp, W, H, cudaMemcpyDeviceToHost, s));
  std::vector<unsigned char> pageable((size_t)W * H, 0);
  CK(cudaMemcpy2DAsync(pageable.data(), W, d, dp, W / 2, H, cudaMemcpyDeviceToHost, s));
  CK(cudaStreamSynchronize(s));
  std::vector<unsigned char> got(pinned_out, pinned_out + (size_t)W * H), want((size_t)W * H);
  for (size_t i = 0; i < want.size(); ++i) want[i] = (unsigned char)(pinned[i] + 1);
  report("2d async pinned", got, want);
  std::vector<unsigned char> want_half((size_t)W * H, 0);
  for (int y = 0; y < H; ++y) memcpy(&want_half[(size_t)y * W], &want[(size_t)y * W], W / 2);
  report("2d async pageable half rows", pageable, want_half);

  cudaPitchedPtr dev;
  CK(cudaMalloc3D(&dev, make_cudaExtent(64, 16, 8)));
  std::vector<unsigned char> box(64 * 16 * 8), box_back(64 * 16 * 8, 0);
  fill(box.data(), box.size(), 6);
  cudaMemcpy3DParms up = {};
  up.srcPtr = make_cudaPitchedPtr(box.data(), 64, 64, 16);
  up.dstPtr = dev;
  up.extent = make_cudaExtent(64, 16, 8);
  up.kind = cudaMemcpyHostToDevice;
  CK(cudaMemcpy3DAsync(&up, s));
  cudaMemcpy3DParms down = {};
  down.srcPtr = dev;
  down.dstPtr = make_cudaPitchedPtr(box_back.data(), 64, 64, 16);
  down.extent = make_cudaExtent(64, 16, 8);
  down.kind = cudaMemcpyDeviceToHost;
  CK(cudaMemcpy3DAsync(&down, s));
  CK(cudaStreamSynchronize(s));
  report("3d async pageable", box_back, box);

  CK(cudaFree(dev.ptr));
  CK(cudaFree(d));
  CK(cudaFreeHost(pinned));
  CK(cudaFreeHost(pinned_out));
  CK(cudaStreamDestroy(s));
}

int main() {
  pitched_2d();
  device_and_large_2d();
  arrays_2d();
  three_d();
  async_copies();
  printf("RESULT %s %s %d mismatches\n", NAME, failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
