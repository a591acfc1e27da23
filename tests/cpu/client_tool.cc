// A client program for end-to-end tests that need a client of their own
// process: linked against the stand-in libcuda, it runs one scenario.
//   client_tool init        cuInit, then exit 0 on success
//   client_tool copy-loop   copy 64 MiB to the device until killed
//   client_tool submit      attribute queries, launches and a synchronize
#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <vector>

namespace {

int report(const char* what, CUresult rc) {
  const char* name = nullptr;
  cuGetErrorName(rc, &name);
  std::printf("%s: %s\n", what, name ? name : "?");
  return rc == CUDA_SUCCESS ? 0 : 1;
}

int copy_loop() {
  CUdevice dev;
  CUcontext ctx;
  CUdeviceptr p;
  const size_t size = 64u << 20;
  if (cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
      cuMemAlloc(&p, size))
    return 1;
  std::vector<char> host(size, 7);
  for (;;) {
    if (CUresult rc = cuMemcpyHtoD(p, host.data(), size)) return report("copy", rc);
    std::printf("copied\n");
    std::fflush(stdout);
  }
}

// Two attribute queries (the second answered from the client's cache), three
// launches (one-way) and one synchronize: what SCUDA_STATS_JSON should show.
int submit() {
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fill;
  CUdeviceptr p;
  const char image[] = "scuda-double-module\nkernel fill 8 4 4\n";
  if (cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
      cuModuleLoadData(&mod, image) || cuModuleGetFunction(&fill, mod, "fill") ||
      cuMemAlloc(&p, 64))
    return 1;
  int regs = 0;
  for (int i = 0; i < 2; ++i)
    if (cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fill) || regs != 32) return 1;
  unsigned value = 7;
  int n = 16;
  void* params[] = {&p, &value, &n};
  for (int i = 0; i < 3; ++i)
    if (cuLaunchKernel(fill, 1, 1, 1, 16, 1, 1, 0, nullptr, params, nullptr)) return 1;
  return report("cuCtxSynchronize", cuCtxSynchronize());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  if (CUresult rc = cuInit(0)) return report("cuInit", rc);
  if (std::strcmp(argv[1], "init") == 0) return report("cuInit", CUDA_SUCCESS);
  if (std::strcmp(argv[1], "copy-loop") == 0) return copy_loop();
  if (std::strcmp(argv[1], "submit") == 0) return submit();
  return 2;
}
