// A client program for end-to-end tests that need a client of their own
// process: linked against the stand-in libcuda, it runs one scenario.
//   client_tool init        cuInit, then exit 0 on success
//   client_tool env NAME..  prints each variable's value ("unset" if it has
//                           none) on one line: what `scuda run` set
//   client_tool copy-loop   copy 64 MiB to the device until killed
//   client_tool submit      attribute queries, launches and a synchronize
//   client_tool runtime-exit  managed memory, then driver calls from an exit
//                             handler registered before cuInit (as cudart's)
//   client_tool program-exit  the same, from one registered after it
//   client_tool callback-exit  a host callback that never returns, then exit
//   client_tool launch-exit   50 launches, then exit without synchronizing
//   client_tool zeros-round-trip  24 MiB of zeros to the device and back,
//                             whatever SCUDA_COMPRESS says
//   client_tool launch-after-loss  a launch, "ready", then once a line comes
//                             on stdin, launches for 300 ms and a synchronize
//   client_tool copy-after-loss  the same with 1 MiB copies, which the
//                             calling thread writes itself
//   client_tool nap MS        a kernel that keeps the session busy MS
//                             milliseconds, then a synchronize
//   client_tool quota A B     allocates A MiB, then B MiB, frees the first,
//                             then B MiB again, printing each result (a
//                             token's memory cap)
//   client_tool array-quota A B  the same with 2D float arrays of A and B MiB
//   client_tool graph-quota A B  a graph exec whose allocation node takes A
//                             MiB, cuMemAlloc of B MiB while it lives and
//                             after its destruction, then an exec of A + B
//   client_tool capture-quota A B  the same with graphs captured from a
//                             stream's cuMemAllocAsync
//   client_tool upload MIB    an async copy of MIB MiB to the device (one-way
//                             requests on the main connection), then a
//                             synchronize
//   client_tool load-module MIB  loads a module image of MIB MiB (kernel
//                             "fill", padded with comment lines of random
//                             text), then looks the kernel up
#include <cuda.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

int report(const char* what, CUresult rc) {
  const char* name = nullptr;
  cuGetErrorName(rc, &name);
  std::printf("%s: %s\n", what, name ? name : "?");
  return rc == CUDA_SUCCESS ? 0 : 1;
}

// Makes device 0's primary context current.
CUresult primary_current() {
  CUdevice dev;
  CUcontext ctx;
  if (CUresult rc = cuDeviceGet(&dev, 0)) return rc;
  if (CUresult rc = cuDevicePrimaryCtxRetain(&ctx, dev)) return rc;
  return cuCtxSetCurrent(ctx);
}

// `size` bytes of device memory in device 0's primary context, made current.
CUresult device_buffer(CUdeviceptr* p, size_t size) {
  if (CUresult rc = primary_current()) return rc;
  return cuMemAlloc(p, size);
}

int copy_loop() {
  CUdeviceptr p;
  const size_t size = 64u << 20;
  if (device_buffer(&p, size)) return 1;
  std::vector<char> host(size, 7);
  for (;;) {
    if (CUresult rc = cuMemcpyHtoD(p, host.data(), size)) return report("copy", rc);
    std::printf("copied\n");
    std::fflush(stdout);
  }
}

// fill(p, value, 16) with 64 bytes at p, in device 0's primary context,
// launched `times` times; false if any step fails.
struct Fill {
  CUfunction fn = nullptr;
  CUdeviceptr p = 0;
  bool set_up() {
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    const char image[] = "scuda-double-module\nkernel fill 8 4 4\n";
    return !(cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
             cuModuleLoadData(&mod, image) || cuModuleGetFunction(&fn, mod, "fill") ||
             cuMemAlloc(&p, 64));
  }
  bool launch(unsigned value, int times) {
    int n = 16;
    void* params[] = {&p, &value, &n};
    for (int i = 0; i < times; ++i)
      if (cuLaunchKernel(fn, 1, 1, 1, 16, 1, 1, 0, nullptr, params, nullptr)) return false;
    return true;
  }
};

// Two attribute queries (the second answered from the client's cache), three
// launches (one-way) and one synchronize: what SCUDA_STATS_JSON should show.
int submit() {
  Fill fill;
  if (!fill.set_up()) return 1;
  int regs = 0;
  for (int i = 0; i < 2; ++i)
    if (cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fill.fn) || regs != 32) return 1;
  if (!fill.launch(7, 3)) return 1;
  return report("cuCtxSynchronize", cuCtxSynchronize());
}

// One-way launches the client may still hold when main returns.
int launch_then_exit() {
  Fill fill;
  return fill.set_up() && fill.launch(0x5ca1ab1e, 50) ? 0 : 1;
}

// Launches after the test has killed the session: the outbox's thread writes
// them to a connection the server has closed.
int launch_after_loss() {
  Fill fill;
  if (!fill.set_up() || !fill.launch(1, 1) || cuCtxSynchronize()) return 1;
  std::printf("ready\n");
  std::fflush(stdout);
  char line[8];
  if (!std::fgets(line, sizeof line, stdin)) return 1;
  for (int i = 0; i < 300; ++i) {
    fill.launch(2, 1);
    usleep(1000);
  }
  return report("cuCtxSynchronize", cuCtxSynchronize());
}

int nap(int ms) {
  CUdevice dev;
  CUcontext ctx;
  CUmodule mod;
  CUfunction fn;
  const char image[] = "scuda-double-module\nkernel nap 4\n";
  if (cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
      cuModuleLoadData(&mod, image) || cuModuleGetFunction(&fn, mod, "nap"))
    return 1;
  void* params[] = {&ms};
  if (CUresult rc = cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr))
    return report("cuLaunchKernel", rc);
  return report("cuCtxSynchronize", cuCtxSynchronize());
}

int upload(size_t mib) {
  CUdeviceptr d = 0;
  std::vector<uint8_t> data(mib << 20);
  std::mt19937 rng(2);
  for (uint8_t& b : data) b = static_cast<uint8_t>(rng());  // lz4 cannot shrink them
  if (CUresult rc = device_buffer(&d, data.size())) return report("cuMemAlloc", rc);
  if (CUresult rc = cuMemcpyHtoDAsync(d, data.data(), data.size(), nullptr))
    return report("cuMemcpyHtoDAsync", rc);
  return report("cuCtxSynchronize", cuCtxSynchronize());
}

int load_module(size_t mib) {
  // Images cross uncompressed, so one random line, repeated, will do.
  std::string line = "#";
  std::mt19937 rng(3);
  for (int i = 0; i < 1022; ++i) line += static_cast<char>('0' + rng() % 64);
  line += '\n';
  std::string image = "scuda-double-module\nkernel fill 8 4 4\n";
  image.reserve((mib << 20) + line.size());
  while (image.size() < (mib << 20)) image += line;
  CUmodule mod = nullptr;
  CUfunction fn = nullptr;
  if (CUresult rc = primary_current()) return report("cuCtxSetCurrent", rc);
  if (CUresult rc = cuModuleLoadData(&mod, image.c_str())) return report("cuModuleLoadData", rc);
  return report("cuModuleGetFunction", cuModuleGetFunction(&fn, mod, "fill"));
}

int quota(size_t a, size_t b) {
  CUdeviceptr first = 0, second = 0;
  CUresult rc = device_buffer(&first, a << 20);
  std::printf("cuMemAlloc %zu MiB: %d\n", a, static_cast<int>(rc));
  std::printf("cuMemAlloc %zu MiB: %d\n", b, static_cast<int>(cuMemAlloc(&second, b << 20)));
  if (rc == CUDA_SUCCESS) cuMemFree(first);
  rc = cuMemAlloc(&second, b << 20);
  std::printf("after a free, cuMemAlloc %zu MiB: %d\n", b, static_cast<int>(rc));
  return report("cuCtxSynchronize", cuCtxSynchronize());
}

// A 2D float array of `mib` MiB, in rows of 4 KiB.
CUresult float_array(CUarray* a, size_t mib) {
  CUDA_ARRAY_DESCRIPTOR d{};
  d.Width = 1024;
  d.Height = mib * 256;
  d.Format = CU_AD_FORMAT_FLOAT;
  d.NumChannels = 1;
  return cuArrayCreate(a, &d);
}

int array_quota(size_t a, size_t b) {
  if (CUresult rc = primary_current()) return report("context", rc);
  CUarray first = nullptr, second = nullptr;
  CUresult rc = float_array(&first, a);
  std::printf("cuArrayCreate %zu MiB: %d\n", a, static_cast<int>(rc));
  std::printf("cuArrayCreate %zu MiB: %d\n", b, static_cast<int>(float_array(&second, b)));
  if (rc == CUDA_SUCCESS) cuArrayDestroy(first);
  rc = float_array(&second, b);
  std::printf("after a destroy, cuArrayCreate %zu MiB: %d\n", b, static_cast<int>(rc));
  return report("cuCtxSynchronize", cuCtxSynchronize());
}

// An exec of a graph with one allocation node of `mib` MiB; *exec stays
// null when the instantiation fails.
CUresult graph_exec_allocating(CUgraphExec* exec, size_t mib) {
  CUgraph graph = nullptr;
  if (CUresult rc = cuGraphCreate(&graph, 0)) return rc;
  CUDA_MEM_ALLOC_NODE_PARAMS params{};
  params.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  params.poolProps.location = {CU_MEM_LOCATION_TYPE_DEVICE, 0};
  params.bytesize = mib << 20;
  CUgraphNode alloc = nullptr;
  CUresult rc = cuGraphAddMemAllocNode(&alloc, graph, nullptr, 0, &params);
  if (rc == CUDA_SUCCESS) rc = cuGraphInstantiate(exec, graph, 0);
  cuGraphDestroy(graph);
  return rc;
}

// An exec of a graph captured from a stream: cuMemAllocAsync of `mib` MiB,
// never freed; *exec stays null when something fails.
CUresult captured_exec_allocating(CUgraphExec* exec, size_t mib) {
  CUstream s = nullptr;
  if (CUresult rc = cuStreamCreate(&s, CU_STREAM_NON_BLOCKING)) return rc;
  CUresult rc = cuStreamBeginCapture(s, CU_STREAM_CAPTURE_MODE_GLOBAL);
  CUdeviceptr p = 0;
  if (rc == CUDA_SUCCESS) rc = cuMemAllocAsync(&p, mib << 20, s);
  CUgraph graph = nullptr;
  const CUresult ended = cuStreamEndCapture(s, &graph);
  if (rc == CUDA_SUCCESS) rc = ended;
  if (rc == CUDA_SUCCESS) rc = cuGraphInstantiate(exec, graph, 0);
  if (graph) cuGraphDestroy(graph);
  cuStreamDestroy(s);
  return rc;
}

int graph_quota(size_t a, size_t b, CUresult (*make)(CUgraphExec*, size_t)) {
  if (CUresult rc = primary_current()) return report("context", rc);
  CUgraphExec exec = nullptr, big = nullptr;
  CUdeviceptr p = 0;
  std::printf("graph of %zu MiB: %d\n", a, static_cast<int>(make(&exec, a)));
  CUresult rc = cuMemAlloc(&p, b << 20);
  std::printf("cuMemAlloc %zu MiB: %d\n", b, static_cast<int>(rc));
  if (rc == CUDA_SUCCESS) cuMemFree(p);
  if (exec) cuGraphExecDestroy(exec);
  rc = cuMemAlloc(&p, b << 20);
  std::printf("after cuGraphExecDestroy, cuMemAlloc %zu MiB: %d\n", b, static_cast<int>(rc));
  if (rc == CUDA_SUCCESS) cuMemFree(p);
  std::printf("graph of %zu MiB: %d\n", a + b, static_cast<int>(make(&big, a + b)));
  return report("cuCtxSynchronize", cuCtxSynchronize());
}

int copy_after_loss() {
  constexpr size_t kSize = 1 << 20;
  CUdeviceptr d = 0;
  std::vector<uint8_t> data(kSize);
  std::mt19937 rng(1);
  for (uint8_t& b : data) b = static_cast<uint8_t>(rng());  // lz4 cannot shrink them
  if (device_buffer(&d, kSize) || cuMemcpyHtoD(d, data.data(), kSize)) return 1;
  std::printf("ready\n");
  std::fflush(stdout);
  char line[8];
  if (!std::fgets(line, sizeof line, stdin)) return 1;
  for (int i = 0; i < 100; ++i) {
    cuMemcpyHtoDAsync(d, data.data(), kSize, nullptr);
    usleep(1000);
  }
  return report("cuCtxSynchronize", cuCtxSynchronize());
}

// Exit handlers that call the driver, as cudart's and cuBLAS's do. cudart
// registers its handler before the driver is loaded, so it runs after the
// driver's own teardown; a program's handler registered later runs before.
CUdevice g_dev;
CUcontext g_ctx;

using StorageDelete = CUresult(CUDAAPI*)(CUcontext, void*);
StorageDelete g_storage_delete = nullptr;  // context-local storage, slot 1

void runtime_exit_handler() {
  if (!g_storage_delete) return;
  std::printf("runtime exit handler: %d %d\n", g_storage_delete(g_ctx, &g_dev),
              cuDevicePrimaryCtxRelease(g_dev));
}

void program_exit_handler() {
  CUcontext popped = nullptr;
  const bool ok = cuCtxPushCurrent(g_ctx) == CUDA_SUCCESS &&
                  cuCtxPopCurrent(&popped) == CUDA_SUCCESS && popped == g_ctx;
  std::printf("program exit handler: %s\n", ok ? "ok" : "failed");
}

// The shape of the GPU sample cublas_batched_managed: managed buffers the
// host writes, a kernel, host reads, frees, then exit.
int managed_then_exit(bool program_handler) {
  CUmodule mod;
  CUfunction fill;
  CUdeviceptr p;
  const int n = 4096;
  const char image[] = "scuda-double-module\nkernel fill 8 4 4\n";
  if (cuDeviceGet(&g_dev, 0) || cuDevicePrimaryCtxRetain(&g_ctx, g_dev) || cuCtxSetCurrent(g_ctx) ||
      cuModuleLoadData(&mod, image) || cuModuleGetFunction(&fill, mod, "fill") ||
      cuMemAllocManaged(&p, n * sizeof(unsigned), CU_MEM_ATTACH_GLOBAL))
    return 1;
  // clang-format off
  const CUuuid storage = {{'\xc6', '\x93', '\x33', '\x6e', '\x11', '\x21', '\xdf', '\x11',
                           '\xa8', '\xc3', '\x68', '\xf3', '\x55', '\xd8', '\x95', '\x93'}};
  // clang-format on
  const void* table = nullptr;
  if (cuGetExportTable(&table, &storage)) return 1;
  g_storage_delete = reinterpret_cast<const StorageDelete*>(table)[1];
  auto* host = reinterpret_cast<unsigned*>(p);
  host[0] = 1;
  unsigned value = 7;
  int count = n;
  void* params[] = {&p, &value, &count};
  if (cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr) || cuCtxSynchronize() ||
      host[n - 1] != 7 || cuMemFree(p))
    return 1;
  if (program_handler) std::atexit(program_exit_handler);
  return 0;
}

// Exits while its stream waits for a callback that never returns: neither
// this process nor its session may hang on it.
int callback_then_exit() {
  CUdevice dev;
  CUcontext ctx;
  CUstream stream;
  if (cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) || cuCtxSetCurrent(ctx) ||
      cuStreamCreate(&stream, 0))
    return 1;
  static std::atomic<bool> running{false};
  auto forever = [](void*) {
    running = true;
    for (;;) pause();
  };
  if (CUresult rc = cuLaunchHostFunc(stream, forever, nullptr))
    return report("cuLaunchHostFunc", rc);
  while (!running) usleep(1000);
  std::printf("callback running\n");
  return 0;
}

// What SCUDA_STATS_JSON shows of compressed copies.
int zeros_round_trip() {
  CUdeviceptr p;
  const size_t size = 24u << 20;
  if (device_buffer(&p, size)) return 1;
  std::vector<char> host(size, 0);
  if (CUresult rc = cuMemcpyHtoD(p, host.data(), size)) return report("cuMemcpyHtoD", rc);
  host.assign(size, 1);
  if (CUresult rc = cuMemcpyDtoH(host.data(), p, size)) return report("cuMemcpyDtoH", rc);
  return std::all_of(host.begin(), host.end(), [](char c) { return c == 0; }) ? 0 : 1;
}

// A call scuda cannot serve, twice: exits 0 when both say so.
int unsupported_twice() {
  CUexternalMemory memory = nullptr;
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc{};
  for (int i = 0; i < 2; ++i)
    if (cuImportExternalMemory(&memory, &desc) != CUDA_ERROR_NOT_SUPPORTED) return 1;
  return 0;
}

// cudart's first look at a device's primary context: slot 2 of the cudart
// table, which hands the context out without activating it.
int cudart_primary() {
  // clang-format off
  const CUuuid cudart = {{'\x6b', '\xd5', '\xfb', '\x6c', '\x5b', '\xf4', '\xe7', '\x4a',
                          '\x89', '\x87', '\xd9', '\x39', '\x12', '\xfd', '\x9d', '\xf9'}};
  // clang-format on
  const void* table = nullptr;
  if (CUresult rc = cuGetExportTable(&table, &cudart)) return report("cuGetExportTable", rc);
  using Get = CUresult (*)(CUcontext*, CUdevice);
  CUcontext ctx = nullptr;
  if (CUresult rc = reinterpret_cast<const Get*>(table)[2](&ctx, 0)) return report("slot 2", rc);
  unsigned flags = 0;
  int active = 1;
  if (CUresult rc = cuDevicePrimaryCtxGetState(0, &flags, &active))
    return report("cuDevicePrimaryCtxGetState", rc);
  std::printf("primary context %s, %s\n", ctx ? "handed out" : "missing",
              active ? "active" : "inactive");
  return ctx && !active ? 0 : 1;
}

// Prints the devices the server offers: their count, then each one's PCI
// address (the double's follow the devices CUDA_VISIBLE_DEVICES picked).
int devices() {
  if (CUresult rc = cuInit(0)) return report("cuInit", rc);
  int count = 0;
  if (CUresult rc = cuDeviceGetCount(&count)) return report("cuDeviceGetCount", rc);
  std::printf("devices %d\n", count);
  for (int dev = 0; dev < count; ++dev) {
    char bus[32] = {};
    if (CUresult rc = cuDeviceGetPCIBusId(bus, sizeof bus, dev))
      return report("cuDeviceGetPCIBusId", rc);
    std::printf("device %d %s\n", dev, bus);
  }
  return 0;
}

int print_env(int count, char** names) {
  for (int i = 0; i < count; ++i) {
    const char* value = std::getenv(names[i]);
    std::printf("%s%s", i ? " " : "", value ? value : "unset");
  }
  std::printf("\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  if (std::strcmp(argv[1], "env") == 0) return print_env(argc - 2, argv + 2);  // no CUDA call
  if (std::strcmp(argv[1], "runtime-exit") == 0) std::atexit(runtime_exit_handler);
  if (CUresult rc = cuInit(0)) return report("cuInit", rc);
  if (std::strcmp(argv[1], "runtime-exit") == 0) return managed_then_exit(false);
  if (std::strcmp(argv[1], "program-exit") == 0) return managed_then_exit(true);
  if (std::strcmp(argv[1], "init") == 0) return report("cuInit", CUDA_SUCCESS);
  if (std::strcmp(argv[1], "devices") == 0) return devices();
  if (std::strcmp(argv[1], "copy-loop") == 0) return copy_loop();
  if (std::strcmp(argv[1], "submit") == 0) return submit();
  if (std::strcmp(argv[1], "callback-exit") == 0) return callback_then_exit();
  if (std::strcmp(argv[1], "launch-exit") == 0) return launch_then_exit();
  if (std::strcmp(argv[1], "zeros-round-trip") == 0) return zeros_round_trip();
  if (std::strcmp(argv[1], "launch-after-loss") == 0) return launch_after_loss();
  if (std::strcmp(argv[1], "copy-after-loss") == 0) return copy_after_loss();
  if (std::strcmp(argv[1], "unsupported") == 0) return unsupported_twice();
  if (std::strcmp(argv[1], "cudart-primary") == 0) return cudart_primary();
  if (std::strcmp(argv[1], "nap") == 0 && argc > 2) return nap(std::atoi(argv[2]));
  if (std::strcmp(argv[1], "upload") == 0 && argc > 2) return upload(std::atoi(argv[2]));
  if (std::strcmp(argv[1], "load-module") == 0 && argc > 2) return load_module(std::atoi(argv[2]));
  if (std::strcmp(argv[1], "quota") == 0 && argc > 3)
    return quota(std::atoi(argv[2]), std::atoi(argv[3]));
  if (std::strcmp(argv[1], "graph-quota") == 0 && argc > 3)
    return graph_quota(std::strtoul(argv[2], nullptr, 10), std::strtoul(argv[3], nullptr, 10),
                       graph_exec_allocating);
  if (std::strcmp(argv[1], "capture-quota") == 0 && argc > 3)
    return graph_quota(std::strtoul(argv[2], nullptr, 10), std::strtoul(argv[3], nullptr, 10),
                       captured_exec_allocating);
  if (std::strcmp(argv[1], "array-quota") == 0 && argc > 3)
    return array_quota(std::atoi(argv[2]), std::atoi(argv[3]));
  return 2;
}
