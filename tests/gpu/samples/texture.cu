// texture: a float cudaArray sampled through a texture object with linear
// filtering (a linear ramp, sampled between texels, must come back as the
// ramp's value there), a pitch-2D texture over cudaMallocPitch memory with
// point sampling, and a surface object that a kernel writes and a texture
// object then reads. The resource descriptor asked back must name the same
// array.
#include <cuda_runtime.h>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#define NAME "texture"
#include "check.h"

static int failures = 0;

static void verdict(const char* what, bool ok, const char* detail) {
  if (!ok) ++failures;
  printf("%-32s %s %s\n", what, detail, ok ? "ok" : "MISMATCH");
}

static float ramp(float x, float y) { return 3.0f * x + 100.0f * y; }

// Samples at texel coordinates (x + dx, y + dy) for every texel (x, y).
__global__ void sample(cudaTextureObject_t t, float* out, int w, int h, float dx, float dy) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w && y < h) out[y * w + x] = tex2D<float>(t, x + 0.5f + dx, y + 0.5f + dy);
}

__global__ void write_surface(cudaSurfaceObject_t s, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w && y < h) surf2Dwrite(make_float2(x * 0.25f, -y * 2.0f), s, x * sizeof(float2), y);
}

__global__ void read_float2(cudaTextureObject_t t, float2* out, int w, int h) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y;
  if (x < w && y < h) out[y * w + x] = tex2D<float2>(t, x + 0.5f, y + 0.5f);
}

static void linear_filtering() {
  const int W = 64, H = 40;
  std::vector<float> img(W * H);
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x) img[y * W + x] = ramp(x, y);
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float>();
  cudaArray_t arr;
  CK(cudaMallocArray(&arr, &f, W, H));
  CK(cudaMemcpy2DToArray(arr, 0, 0, img.data(), W * sizeof(float), W * sizeof(float), H,
                         cudaMemcpyHostToDevice));
  cudaResourceDesc res = {};
  res.resType = cudaResourceTypeArray;
  res.res.array.array = arr;
  cudaTextureDesc td = {};
  td.addressMode[0] = td.addressMode[1] = cudaAddressModeClamp;
  td.filterMode = cudaFilterModeLinear;
  td.readMode = cudaReadModeElementType;
  cudaTextureObject_t tex;
  CK(cudaCreateTextureObject(&tex, &res, &td, nullptr));

  cudaResourceDesc back = {};
  CK(cudaGetTextureObjectResourceDesc(&back, tex));
  verdict("resource desc names the array",
          back.resType == cudaResourceTypeArray && back.res.array.array == arr, "");

  float* d;
  CK(cudaMalloc(&d, W * H * sizeof(float)));
  // Quarter steps: exact in the texture unit's 8-bit interpolation weights.
  const float dx = 0.25f, dy = 0.75f;
  sample<<<dim3(1, H), W>>>(tex, d, W, H, dx, dy);
  CK(cudaGetLastError());
  std::vector<float> out(W * H);
  CK(cudaMemcpy(out.data(), d, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  double worst = 0;
  for (int y = 0; y < H - 1; ++y)
    for (int x = 0; x < W - 1; ++x)
      worst = fmax(worst, fabs(out[y * W + x] - ramp(x + dx, y + dy)));
  char detail[64];
  snprintf(detail, sizeof detail, "max error %.6f", worst);
  verdict("linear filtering between texels", worst < 1e-2, detail);
  float edge = out[(H - 1) * W + (W - 1)];  // clamped at the far corner
  snprintf(detail, sizeof detail, "corner %.3f", edge);
  verdict("clamp addressing at the edge", fabs(edge - ramp(W - 1, H - 1)) < 1e-2, detail);
  CK(cudaDestroyTextureObject(tex));
  CK(cudaFree(d));
  CK(cudaFreeArray(arr));
}

static void pitch2d_point() {
  const int W = 100, H = 30;
  float* img;
  size_t pitch;
  CK(cudaMallocPitch(&img, &pitch, W * sizeof(float), H));
  std::vector<float> host(W * H);
  for (int i = 0; i < W * H; ++i) host[i] = i * 0.125f;
  CK(cudaMemcpy2D(img, pitch, host.data(), W * sizeof(float), W * sizeof(float), H,
                  cudaMemcpyHostToDevice));
  cudaResourceDesc res = {};
  res.resType = cudaResourceTypePitch2D;
  res.res.pitch2D.devPtr = img;
  res.res.pitch2D.desc = cudaCreateChannelDesc<float>();
  res.res.pitch2D.width = W;
  res.res.pitch2D.height = H;
  res.res.pitch2D.pitchInBytes = pitch;
  cudaTextureDesc td = {};
  td.filterMode = cudaFilterModePoint;
  td.readMode = cudaReadModeElementType;
  cudaTextureObject_t tex;
  CK(cudaCreateTextureObject(&tex, &res, &td, nullptr));
  float* d;
  CK(cudaMalloc(&d, W * H * sizeof(float)));
  sample<<<dim3(1, H), 128>>>(tex, d, W, H, 0.0f, 0.0f);
  CK(cudaGetLastError());
  std::vector<float> out(W * H);
  CK(cudaMemcpy(out.data(), d, out.size() * sizeof(float), cudaMemcpyDeviceToHost));
  verdict("pitch2D point sampling", out == host, "");
  CK(cudaDestroyTextureObject(tex));
  CK(cudaFree(d));
  CK(cudaFree(img));
}

static void surface_write_then_read() {
  const int W = 48, H = 20;
  cudaChannelFormatDesc f = cudaCreateChannelDesc<float2>();
  cudaArray_t arr;
  CK(cudaMallocArray(&arr, &f, W, H, cudaArraySurfaceLoadStore));
  cudaResourceDesc res = {};
  res.resType = cudaResourceTypeArray;
  res.res.array.array = arr;
  cudaSurfaceObject_t surf;
  CK(cudaCreateSurfaceObject(&surf, &res));
  cudaResourceDesc back = {};
  CK(cudaGetSurfaceObjectResourceDesc(&back, surf));
  verdict("surface desc names the array", back.res.array.array == arr, "");
  write_surface<<<dim3(1, H), 64>>>(surf, W, H);
  CK(cudaGetLastError());

  std::vector<float2> host(W * H);
  CK(cudaMemcpy2DFromArray(host.data(), W * sizeof(float2), arr, 0, 0, W * sizeof(float2), H,
                           cudaMemcpyDeviceToHost));
  bool ok = true;
  for (int y = 0; y < H; ++y)
    for (int x = 0; x < W; ++x)
      ok = ok && host[y * W + x].x == x * 0.25f && host[y * W + x].y == -y * 2.0f;
  verdict("surface writes reach the array", ok, "");

  cudaTextureDesc td = {};
  td.filterMode = cudaFilterModePoint;
  td.readMode = cudaReadModeElementType;
  cudaTextureObject_t tex;
  CK(cudaCreateTextureObject(&tex, &res, &td, nullptr));
  float2* d;
  CK(cudaMalloc(&d, W * H * sizeof(float2)));
  read_float2<<<dim3(1, H), 64>>>(tex, d, W, H);
  CK(cudaGetLastError());
  std::vector<float2> seen(W * H);
  CK(cudaMemcpy(seen.data(), d, seen.size() * sizeof(float2), cudaMemcpyDeviceToHost));
  verdict("texture reads what the surface wrote",
          memcmp(seen.data(), host.data(), seen.size() * sizeof(float2)) == 0, "");
  CK(cudaDestroyTextureObject(tex));
  CK(cudaDestroySurfaceObject(surf));
  CK(cudaFree(d));
  CK(cudaFreeArray(arr));
}

int main() {
  linear_filtering();
  pitch2d_point();
  surface_write_then_read();
  printf("RESULT %s %s %d mismatches\n", NAME, failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
