#include "cuda_figures.h"

#include <dlfcn.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <random>
#include <stdexcept>
#include <thread>

namespace scuda::bench {

namespace {

void check(CUresult rc, const char* what) {
  if (rc == CUDA_SUCCESS) return;
  const char* name = nullptr;
  cuGetErrorName(rc, &name);
  throw std::runtime_error(std::string(what) + ": " + (name ? name : "unknown CUresult"));
}

// The test double's module format: one kernel without parameters.
constexpr char kDoubleImage[] = "scuda-double-module\nkernel empty\n";

// The same kernel for a real GPU; the driver JIT-compiles it for the device.
constexpr char kPtxImage[] =
    ".version 7.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .entry empty()\n"
    "{\n"
    "  ret;\n"
    "}\n";

// A kernel that answers the host while it runs: waits, at most `ms`
// milliseconds (the GPU's global timer), for words[0] to become nonzero,
// then stores words[0] + 1 in words[1]; the double's own echo
// (tests/double/builtins.h) does the same.
constexpr char kDoubleEchoImage[] = "scuda-double-module\nkernel echo 8 4\n";
constexpr char kPtxEchoImage[] =
    ".version 7.0\n"
    ".target sm_50\n"
    ".address_size 64\n"
    ".visible .entry echo(.param .u64 words, .param .u32 ms)\n"
    "{\n"
    "  .reg .b32 %r<4>;\n"
    "  .reg .b64 %rd<6>;\n"
    "  .reg .pred %p<3>;\n"
    "  ld.param.u64 %rd1, [words];\n"
    "  ld.param.u32 %r2, [ms];\n"
    "  mul.wide.u32 %rd2, %r2, 1000000;\n"
    "  mov.u64 %rd3, %globaltimer;\n"
    "  add.u64 %rd4, %rd3, %rd2;\n"
    "POLL:\n"
    "  ld.volatile.global.u32 %r1, [%rd1];\n"
    "  setp.ne.u32 %p1, %r1, 0;\n"
    "  @%p1 bra ANSWER;\n"
    "  mov.u64 %rd5, %globaltimer;\n"
    "  setp.lt.u64 %p2, %rd5, %rd4;\n"
    "  @%p2 bra POLL;\n"
    "  ret;\n"
    "ANSWER:\n"
    "  add.u32 %r3, %r1, 1;\n"
    "  st.volatile.global.u32 [%rd1+4], %r3;\n"
    "  membar.sys;\n"
    "  ret;\n"
    "}\n";

constexpr char kDoubleDeviceName[] = "scuda test double";

class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t bytes) { check(cuMemAlloc(&ptr_, bytes), "cuMemAlloc"); }
  ~DeviceBuffer() { cuMemFree(ptr_); }
  CUdeviceptr get() const { return ptr_; }

 private:
  CUdeviceptr ptr_ = 0;
};

class ManagedBuffer {
 public:
  explicit ManagedBuffer(size_t bytes) {
    check(cuMemAllocManaged(&ptr_, bytes, CU_MEM_ATTACH_GLOBAL), "cuMemAllocManaged");
  }
  ~ManagedBuffer() { cuMemFree(ptr_); }
  CUdeviceptr device() const { return ptr_; }
  uint64_t* host() const { return reinterpret_cast<uint64_t*>(ptr_); }

 private:
  CUdeviceptr ptr_ = 0;
};

// Three quarters zeros, then floats repeating every 64: what lz4 shrinks
// well, as sparse activations or padded batches are shrunk.
void fill_compressible(void* p, size_t bytes) {
  auto* out = static_cast<char*>(p);
  std::memset(out, 0, bytes);
  for (size_t i = bytes / 4 * 3 / sizeof(float) * sizeof(float); i + sizeof(float) <= bytes;
       i += sizeof(float)) {
    const float f = 0.25f * static_cast<float>(i / sizeof(float) % 64);
    std::memcpy(out + i, &f, sizeof f);
  }
}

// Bytes no compressor shrinks, as trained weights or activations are.
void fill_random(void* p, size_t bytes) {
  std::mt19937_64 gen(42);
  auto* out = static_cast<char*>(p);
  for (size_t i = 0; i + 8 <= bytes; i += 8) {
    const uint64_t v = gen();
    std::memcpy(out + i, &v, 8);
  }
}

// Pageable (a touched std::vector) or page-locked (cuMemHostAlloc) memory.
class HostBuffer {
 public:
  HostBuffer(size_t bytes, bool pinned, Content content) {
    if (pinned) {
      check(cuMemHostAlloc(&pinned_, bytes, 0), "cuMemHostAlloc");
    } else {
      pageable_.resize(bytes);
    }
    // Written: untouched pages would all be one zero page, which copies
    // faster than real data.
    if (content == Content::kOnes) std::memset(get(), 1, bytes);
    else if (content == Content::kRandom) fill_random(get(), bytes);
    else fill_compressible(get(), bytes);
  }
  ~HostBuffer() {
    if (pinned_) cuMemFreeHost(pinned_);
  }
  void* get() { return pinned_ ? pinned_ : pageable_.data(); }

 private:
  void* pinned_ = nullptr;
  std::vector<char> pageable_;
};

template <class F>
std::vector<double> timed(const Plan& plan, F&& call) {
  return collect(plan, [&] {
    const Clock::time_point start = Clock::now();
    call();
    return seconds_since(start);
  });
}

}  // namespace

CudaBench::CudaBench() {
  check(cuInit(0), "cuInit");
  check(cuDeviceGet(&device_, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(context_), "cuCtxSetCurrent");
  char name[256] = {};
  check(cuDeviceGetName(name, sizeof name, device_), "cuDeviceGetName");
  device_name_ = name;
}

CudaBench::~CudaBench() {
  if (module_) cuModuleUnload(module_);
  cuDevicePrimaryCtxRelease(device_);
}

std::vector<double> CudaBench::sync_copy(const Plan& plan) {
  DeviceBuffer device(4);
  char host[4];
  return timed(plan, [&] { check(cuMemcpyDtoH(host, device.get(), 4), "cuMemcpyDtoH"); });
}

std::vector<double> CudaBench::htod(size_t bytes, bool pinned, const Plan& plan, Content content) {
  DeviceBuffer device(bytes);
  HostBuffer host(bytes, pinned, content);
  // A copy into a known allocation may return once its bytes are sent, as
  // CUDA's may once they are staged: the synchronize makes it a delivered rate.
  return timed(plan, [&] {
    check(cuMemcpyHtoD(device.get(), host.get(), bytes), "cuMemcpyHtoD");
    check(cuCtxSynchronize(), "cuCtxSynchronize");
  });
}

std::vector<double> CudaBench::dtoh(size_t bytes, bool pinned, const Plan& plan, Content content) {
  DeviceBuffer device(bytes);
  HostBuffer host(bytes, pinned, content);
  // The device holds what the host buffer does; the copies then overwrite
  // the host buffer with the same bytes.
  check(cuMemcpyHtoD(device.get(), host.get(), bytes), "cuMemcpyHtoD");
  return timed(plan, [&] { check(cuMemcpyDtoH(host.get(), device.get(), bytes), "cuMemcpyDtoH"); });
}

std::vector<double> CudaBench::managed_pull(size_t bytes, const Plan& plan) {
  ManagedBuffer managed(bytes);
  HostBuffer source(bytes, false, Content::kRandom);
  uint64_t sum = 0;
  const std::vector<double> seconds = collect(plan, [&] {
    check(cuMemcpyHtoD(managed.device(), source.get(), bytes), "cuMemcpyHtoD");
    check(cuCtxSynchronize(), "cuCtxSynchronize");
    const Clock::time_point start = Clock::now();
    const uint64_t* words = managed.host();
    for (size_t i = 0; i < bytes / sizeof *words; ++i) sum += words[i];
    return seconds_since(start);
  });
  // The sum is used, so the reads cannot be left out.
  if (sum == 0) throw std::runtime_error("managed_pull: the device's writes were not seen");
  return seconds;
}

std::vector<double> CudaBench::managed_push(size_t bytes, const Plan& plan) {
  ManagedBuffer managed(bytes);
  DeviceBuffer device(bytes);
  int round = 0;
  return timed(plan, [&] {
    std::memset(managed.host(), ++round & 0xff, bytes);
    check(cuMemcpyDtoD(device.get(), managed.device(), bytes), "cuMemcpyDtoD");
    check(cuCtxSynchronize(), "cuCtxSynchronize");
  });
}

std::vector<double> CudaBench::alloc_free(const Plan& plan) {
  return timed(plan, [&] {
    CUdeviceptr p = 0;
    check(cuMemAlloc(&p, 1 << 20), "cuMemAlloc");
    check(cuMemFree(p), "cuMemFree");
  });
}

CUfunction CudaBench::load_empty_kernel(ModuleKind kind) {
  if (kind == ModuleKind::kAuto)
    kind = device_name_ == kDoubleDeviceName ? ModuleKind::kDouble : ModuleKind::kPtx;
  const bool is_double = kind == ModuleKind::kDouble;
  if (module_) check(cuModuleUnload(module_), "cuModuleUnload");
  module_ = nullptr;
  check(cuModuleLoadData(&module_, is_double ? kDoubleImage : kPtxImage), "cuModuleLoadData");
  module_used_ = is_double ? "double" : "ptx";
  CUfunction function = nullptr;
  check(cuModuleGetFunction(&function, module_, "empty"), "cuModuleGetFunction");
  return function;
}

std::vector<CudaBench::LaunchSample> CudaBench::launches(ModuleKind kind, int launches,
                                                         const Plan& plan) {
  CUfunction function = load_empty_kernel(kind);
  auto launch_all = [&] {
    for (int i = 0; i < launches; ++i)
      check(cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, nullptr, nullptr, nullptr),
            "cuLaunchKernel");
    check(cuCtxSynchronize(), "cuCtxSynchronize");
  };
  return collect(plan, [&] {
    const Clock::time_point start = Clock::now();
    const double cpu_start = process_cpu_seconds();
    launch_all();
    const double cpu = process_cpu_seconds() - cpu_start;
    return LaunchSample{launches / seconds_since(start), cpu * 1e6 / launches};
  });
}

std::vector<double> CudaBench::live_exchange(const Plan& plan) {
  using SetLive = int (*)(int);
  const auto set_live =
      reinterpret_cast<SetLive>(dlsym(RTLD_DEFAULT, "scuda_set_live_host_memory"));
  const int before = set_live ? set_live(2) : 0;  // this block live, whoever allocates it
  void* block = nullptr;
  const CUresult allocated = cuMemHostAlloc(&block, 4096, CU_MEMHOSTALLOC_DEVICEMAP);
  if (set_live) set_live(before);
  check(allocated, "cuMemHostAlloc");
  CUdeviceptr device = 0;
  check(cuMemHostGetDevicePointer(&device, block, 0), "cuMemHostGetDevicePointer");
  CUmodule module = nullptr;
  const bool is_double = device_name_ == kDoubleDeviceName;
  check(cuModuleLoadData(&module, is_double ? kDoubleEchoImage : kPtxEchoImage),
        "cuModuleLoadData");
  CUfunction echo = nullptr;
  check(cuModuleGetFunction(&echo, module, "echo"), "cuModuleGetFunction");
  auto* words = static_cast<volatile uint32_t*>(block);
  uint32_t round = 0;
  std::vector<double> seconds = collect(plan, [&] {
    round += 2;
    words[0] = 0;
    words[1] = 0;
    check(cuCtxSynchronize(), "cuCtxSynchronize");  // the zeros are the device's
    int limit_ms = 10000;
    void* params[] = {&device, &limit_ms};
    check(cuLaunchKernel(echo, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr), "cuLaunchKernel");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the kernel polls by now
    const Clock::time_point start = Clock::now();
    words[0] = round;
    while (words[1] != round + 1)
      if (seconds_since(start) > 10) check(CUDA_ERROR_LAUNCH_TIMEOUT, "the echo kernel's answer");
    const double s = seconds_since(start);
    check(cuCtxSynchronize(), "cuCtxSynchronize");
    return s;
  });
  check(cuModuleUnload(module), "cuModuleUnload");
  check(cuMemFreeHost(block), "cuMemFreeHost");
  return seconds;
}

// The stand-in's count of replies this process waited for; 0 natively.
uint64_t replies_awaited() {
  using Count = uint64_t (*)();
  static const auto count = reinterpret_cast<Count>(dlsym(RTLD_DEFAULT, "scuda_replies_awaited"));
  return count ? count() : 0;
}

std::vector<CudaBench::CopySample> CudaBench::copy_cpu(int copies, const Plan& plan) {
  constexpr size_t kBytes = 64;
  HostBuffer host(kBytes, true, Content::kRandom);
  DeviceBuffer device(kBytes);
  CUstream stream = nullptr;
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  std::vector<CopySample> samples = collect(plan, [&] {
    const uint64_t replies = replies_awaited();
    const double start = thread_cpu_seconds();
    for (int i = 0; i < copies; ++i)
      check(cuMemcpyHtoDAsync(device.get(), host.get(), kBytes, stream), "cuMemcpyHtoDAsync");
    const double cpu = thread_cpu_seconds() - start;
    const auto waited = static_cast<double>(replies_awaited() - replies);
    check(cuStreamSynchronize(stream), "cuStreamSynchronize");
    return CopySample{cpu * 1e6 / copies, waited / copies};
  });
  check(cuStreamDestroy(stream), "cuStreamDestroy");
  return samples;
}

std::vector<std::pair<std::string, std::vector<double>>> CudaBench::local_queries(
    ModuleKind kind, const Plan& plan) {
  CUfunction function = load_empty_kernel(kind);
  DeviceBuffer device(4);
  CUstream stream = nullptr;
  CUevent event = nullptr;
  check(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  check(cuLaunchKernel(function, 1, 1, 1, 1, 1, 1, 0, stream, nullptr, nullptr), "cuLaunchKernel");
  check(cuEventRecord(event, stream), "cuEventRecord");
  check(cuStreamSynchronize(stream), "cuStreamSynchronize");
  CUcontext ctx = nullptr;
  CUdevice dev = 0;
  int value = 0;
  unsigned memory_type = 0;
  void* entry = nullptr;
  const CUdeviceptr address = device.get();
  const std::vector<std::pair<std::string, std::function<CUresult()>>> queries = {
      {"cuCtxGetCurrent", [&] { return cuCtxGetCurrent(&ctx); }},
      {"cuCtxGetDevice", [&] { return cuCtxGetDevice(&dev); }},
      {"cuDeviceGetAttribute",
       [&] { return cuDeviceGetAttribute(&value, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0); }},
      {"cuPointerGetAttribute",
       [&] {
         return cuPointerGetAttribute(&memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, address);
       }},
      {"cuFuncGetAttribute",
       [&] {
         return cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, function);
       }},
      {"cuStreamQuery", [&] { return cuStreamQuery(stream); }},
      {"cuEventQuery", [&] { return cuEventQuery(event); }},
      {"cuGetProcAddress",
       [&] { return cuGetProcAddress("cuLaunchKernel", &entry, 12000, 0, nullptr); }},
  };
  constexpr int kBatch = 1000;
  std::vector<std::pair<std::string, std::vector<double>>> out;
  // Not a structured binding: clang 14 cannot capture one in a lambda.
  for (const auto& named : queries) {
    const std::string& name = named.first;
    const auto& query = named.second;
    check(query(), name.c_str());
    out.emplace_back(name, collect(plan, [&] {
                       const Clock::time_point start = Clock::now();
                       for (int i = 0; i < kBatch; ++i) query();
                       return seconds_since(start) * 1e9 / kBatch;
                     }));
  }
  cuEventDestroy(event);
  cuStreamDestroy(stream);
  return out;
}

}  // namespace scuda::bench
