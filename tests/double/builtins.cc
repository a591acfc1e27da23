#include "builtins.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "allocations.h"

namespace scuda_double {
namespace {

template <class T>
T arg(const KernelDesc& kernel, const std::vector<uint8_t>& params, size_t index) {
  T value;
  std::memcpy(&value, params.data() + kernel.offsets[index], sizeof(T));
  return value;
}

template <class T>
T* span(uintptr_t address, int n, bool* ok) {
  *ok = *ok && device_range(address, static_cast<size_t>(n) * sizeof(T));
  return reinterpret_cast<T*>(address);
}

CUresult vadd(const KernelDesc& k, const std::vector<uint8_t>& p) {
  int n = arg<int>(k, p, 3);
  if (n <= 0) return CUDA_SUCCESS;
  bool ok = true;
  const float* a = span<float>(arg<uintptr_t>(k, p, 0), n, &ok);
  const float* b = span<float>(arg<uintptr_t>(k, p, 1), n, &ok);
  float* c = span<float>(arg<uintptr_t>(k, p, 2), n, &ok);
  if (!ok) return CUDA_ERROR_ILLEGAL_ADDRESS;
  for (int i = 0; i < n; ++i) c[i] = a[i] + b[i];
  return CUDA_SUCCESS;
}

CUresult fill(const KernelDesc& k, const std::vector<uint8_t>& p) {
  int n = arg<int>(k, p, 2);
  if (n <= 0) return CUDA_SUCCESS;
  bool ok = true;
  unsigned* out = span<unsigned>(arg<uintptr_t>(k, p, 0), n, &ok);
  if (!ok) return CUDA_ERROR_ILLEGAL_ADDRESS;
  unsigned value = arg<unsigned>(k, p, 1);
  for (int i = 0; i < n; ++i) out[i] = value;
  return CUDA_SUCCESS;
}

CUresult scale(const KernelDesc& k, const std::vector<uint8_t>& p) {
  int n = arg<int>(k, p, 2);
  if (n <= 0) return CUDA_SUCCESS;
  bool ok = true;
  float* data = span<float>(arg<uintptr_t>(k, p, 0), n, &ok);
  if (!ok) return CUDA_ERROR_ILLEGAL_ADDRESS;
  float factor = arg<float>(k, p, 1);
  for (int i = 0; i < n; ++i) data[i] *= factor;
  return CUDA_SUCCESS;
}

// As a kernel's printf: the line reaches the process's standard output.
CUresult say(const KernelDesc& k, const std::vector<uint8_t>& p) {
  std::printf("say %d\n", arg<int>(k, p, 0));
  std::fflush(stdout);
  return CUDA_SUCCESS;
}

// A kernel that talks with the host while it runs, as NCCL's do through
// mapped host memory: waits, at most `ms` milliseconds, for words[0] to
// become nonzero, then sets words[1] to words[0] + 1.
CUresult echo(const KernelDesc& k, const std::vector<uint8_t>& p) {
  bool ok = true;
  unsigned* words = span<unsigned>(arg<uintptr_t>(k, p, 0), 2, &ok);
  if (!ok) return CUDA_ERROR_ILLEGAL_ADDRESS;
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::milliseconds(arg<int>(k, p, 1));
  unsigned asked = 0;
  while ((asked = std::atomic_ref<unsigned>(words[0]).load()) == 0) {
    if (std::chrono::steady_clock::now() > until) return CUDA_ERROR_LAUNCH_TIMEOUT;
    std::this_thread::yield();
  }
  std::atomic_ref<unsigned>(words[1]).store(asked + 1);
  return CUDA_SUCCESS;
}

// A kernel that takes its time: the session is busy for `ms` milliseconds.
CUresult nap(const KernelDesc& k, const std::vector<uint8_t>& p) {
  std::this_thread::sleep_for(std::chrono::milliseconds(arg<int>(k, p, 0)));
  return CUDA_SUCCESS;
}

bool signature(const KernelDesc& k, const char* name, std::vector<size_t> sizes) {
  return k.name == name && k.sizes == sizes;
}

}  // namespace

CUresult run_builtin(const KernelDesc& kernel, const std::vector<uint8_t>& params) {
  if (signature(kernel, "vadd", {8, 8, 8, 4})) return vadd(kernel, params);
  if (signature(kernel, "fill", {8, 4, 4})) return fill(kernel, params);
  if (signature(kernel, "scale", {8, 4, 4})) return scale(kernel, params);
  if (signature(kernel, "say", {4})) return say(kernel, params);
  if (signature(kernel, "nap", {4})) return nap(kernel, params);
  if (signature(kernel, "echo", {8, 4})) return echo(kernel, params);
  return CUDA_SUCCESS;
}

}  // namespace scuda_double
