// A client of its own process for the module cache tests: loads module image
// files and reports each result and the bytes the process sent to the
// server (sent_bytes.h).
//   module_load_tool load FILE...   load each file, then look up kernel "k"
//   module_load_tool detached FILE  load FILE, then again with no current
//                                   context (one-way, so it fails later)
//   module_load_tool library FILE...  load each file as a library, then look
//                                   up kernel "k" in each, then ask each
//                                   kernel an attribute; with the replies
//                                   awaited after each step, and the bytes
//   module_load_tool answers FILE   load FILE as a module and as a library,
//                                   look kernel "k" up in each (and the
//                                   library kernel's function), launch
//                                   both, ask occupancy questions of
//                                   both; with the replies awaited after
//                                   each step; then a function attribute
//                                   before and after a set
//   module_load_tool set-first FILE  load FILE as a library, look kernel
//                                   "k" and its function up, set an
//                                   attribute, launch; with the replies
//                                   awaited
#include <cuda.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "sent_bytes.h"

// libcuda.so.1's count of the replies this process waited for.
extern "C" uint64_t scuda_replies_awaited();

namespace {

const char* name_of(CUresult rc) {
  const char* name = nullptr;
  cuGetErrorName(rc, &name);
  return name ? name : "?";
}

std::string read_file(const char* path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void print_sent() {
  std::printf("sent: %llu\n", static_cast<unsigned long long>(scuda::test::bytes_sent()));
}

void load(const char* path) {
  const std::string image = read_file(path);
  CUmodule mod = nullptr;
  CUresult rc = cuModuleLoadData(&mod, image.c_str());
  std::printf("load: %s\n", name_of(rc));
  if (rc != CUDA_SUCCESS) return;
  CUfunction fn = nullptr;
  std::printf("function: %s\n", name_of(cuModuleGetFunction(&fn, mod, "k")));
}

int detached(const char* path, CUcontext ctx) {
  const std::string image = read_file(path);
  CUmodule held = nullptr, failed = nullptr;
  std::printf("load: %s\n", name_of(cuModuleLoadData(&held, image.c_str())));
  cuCtxSetCurrent(nullptr);
  std::printf("one-way load: %s\n", name_of(cuModuleLoadData(&failed, image.c_str())));
  cuCtxSetCurrent(ctx);
  CUfunction fn = nullptr;
  std::printf("function: %s\n", name_of(cuModuleGetFunction(&fn, failed, "k")));
  std::printf("synchronize: %s\n", name_of(cuCtxSynchronize()));
  return 0;
}

void print_awaited(uint64_t since) {
  std::printf("awaited: %llu\n", static_cast<unsigned long long>(scuda_replies_awaited() - since));
}

int libraries(int n, char** paths) {
  const uint64_t start = scuda_replies_awaited();
  std::vector<CUlibrary> libs(n);
  std::vector<CUkernel> kernels(n);
  for (int i = 0; i < n; ++i) {
    const std::string image = read_file(paths[i]);
    std::printf("load: %s\n", name_of(cuLibraryLoadData(&libs[i], image.c_str(), nullptr, nullptr,
                                                        0, nullptr, nullptr, 0)));
  }
  print_awaited(start);
  for (int i = 0; i < n; ++i)
    std::printf("kernel: %s\n", name_of(cuLibraryGetKernel(&kernels[i], libs[i], "k")));
  print_awaited(start);
  CUdevice dev = 0;
  for (int i = 0; i < n; ++i) {
    int regs = 0;
    std::printf("attribute: %s\n",
                name_of(cuKernelGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, kernels[i], dev)));
  }
  print_awaited(start);
  print_sent();
  return 0;
}

// Launches k(buf, 7) on the current context's default stream.
CUresult launch_k(CUfunction fn, CUdeviceptr buf) {
  int value = 7;
  void* params[] = {&buf, &value};
  return cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr);
}

int answers(const char* path) {
  const std::string image = read_file(path);
  CUdeviceptr buf = 0;
  if (cuMemAlloc(&buf, 64)) return 1;
  const uint64_t start = scuda_replies_awaited();
  CUmodule mod = nullptr;
  CUlibrary lib = nullptr;
  CUkernel kernel = nullptr;
  CUfunction fn = nullptr, kernel_fn = nullptr;
  std::printf("module: %s\n", name_of(cuModuleLoadData(&mod, image.c_str())));
  std::printf("function: %s\n", name_of(cuModuleGetFunction(&fn, mod, "k")));
  std::printf("library: %s\n", name_of(cuLibraryLoadData(&lib, image.c_str(), nullptr, nullptr, 0,
                                                         nullptr, nullptr, 0)));
  std::printf("kernel: %s\n", name_of(cuLibraryGetKernel(&kernel, lib, "k")));
  std::printf("kernel function: %s\n", name_of(cuKernelGetFunction(&kernel_fn, kernel)));
  print_awaited(start);
  std::printf("launches: %s %s\n", name_of(launch_k(fn, buf)), name_of(launch_k(kernel_fn, buf)));
  print_awaited(start);
  int a = 0, b = 0, clusters = 0;
  cuOccupancyMaxActiveBlocksPerMultiprocessor(&a, fn, 256, 0);
  cuOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel_fn, 512, 0);
  // A kernel's cluster question names a stream, whose context is the kernel's.
  CUstream stream = nullptr;
  cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
  CUlaunchAttribute cluster{};
  cluster.id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
  cluster.value.clusterDim.x = 2;
  cluster.value.clusterDim.y = cluster.value.clusterDim.z = 1;
  const CUlaunchConfig config{64, 1, 1, 128, 1, 1, 0, stream, &cluster, 1};
  cuOccupancyMaxActiveClusters(&clusters, reinterpret_cast<CUfunction>(kernel), &config);
  std::printf("occupancy: %d %d, clusters %d\n", a, b, clusters);
  print_awaited(start);
  const auto attr = CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
  int before = 0, after = 0;
  cuFuncGetAttribute(&before, attr, kernel_fn);
  cuFuncSetAttribute(kernel_fn, attr, 65536);
  cuFuncGetAttribute(&after, attr, kernel_fn);
  std::printf("dynamic shared: %d then %d\n", before, after);
  print_awaited(start);
  std::printf("synchronize: %s\n", name_of(cuCtxSynchronize()));
  return 0;
}

// cuDNN's order: the lookup's reply is first needed by a launch after a set.
int set_first(const char* path) {
  const std::string image = read_file(path);
  CUdeviceptr buf = 0;
  if (cuMemAlloc(&buf, 64)) return 1;
  const uint64_t start = scuda_replies_awaited();
  CUlibrary lib = nullptr;
  CUkernel kernel = nullptr;
  CUfunction fn = nullptr;
  cuLibraryLoadData(&lib, image.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0);
  cuLibraryGetKernel(&kernel, lib, "k");
  cuKernelGetFunction(&fn, kernel);
  cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 65536);
  std::printf("launch: %s\n", name_of(launch_k(fn, buf)));
  print_awaited(start);
  std::printf("synchronize: %s\n", name_of(cuCtxSynchronize()));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx))
    return 1;
  if (std::strcmp(argv[1], "detached") == 0) return detached(argv[2], ctx);
  if (std::strcmp(argv[1], "library") == 0) return libraries(argc - 2, argv + 2);
  if (std::strcmp(argv[1], "answers") == 0) return answers(argv[2]);
  if (std::strcmp(argv[1], "set-first") == 0) return set_first(argv[2]);
  if (std::strcmp(argv[1], "load") != 0) return 2;
  for (int i = 2; i < argc; ++i) load(argv[i]);
  print_sent();
  return 0;
}
