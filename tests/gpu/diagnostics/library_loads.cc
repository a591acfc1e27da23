// library_loads.cc: what a session's load of an image from the server's
// module cache costs, step by step, natively on the GPU host: reading the
// file, hashing it (the cache checks each read), cuLibraryLoadData, and the
// first kernel attribute (which makes a lazily loaded kernel's module load).
// For the managed SGEMM's first cuBLAS lookup (docs/bench/managed.md).
//   g++ -O2 -std=c++20 -I/usr/local/cuda/include -o /tmp/library_loads \
//     tests/gpu/diagnostics/library_loads.cc -lcuda -lcrypto
//   /tmp/library_loads ~/.cache/scuda/modules [preserved]
// With `preserved`, each load passes CU_LIBRARY_BINARY_IS_PRESERVED, as
// cudart does: the driver then keeps no copy of the image.
#include <cuda.h>
#include <openssl/sha.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point* t) {
  const Clock::time_point now = Clock::now();
  const double ms = std::chrono::duration<double, std::milli>(now - *t).count();
  *t = now;
  return ms;
}

// The first kernel's attribute, which loads its module; its time in ms.
double first_kernel(CUlibrary lib, CUdevice dev, unsigned* count) {
  *count = 0;
  if (cuLibraryGetKernelCount(count, lib) != CUDA_SUCCESS || *count == 0) return 0;
  std::vector<CUkernel> kernels(*count);
  if (cuLibraryEnumerateKernels(kernels.data(), *count, lib) != CUDA_SUCCESS) return 0;
  Clock::time_point t = Clock::now();
  int value = 0;
  cuKernelGetAttribute(&value, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kernels[0], dev);
  return ms_since(&t);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const bool preserved = argc > 2 && std::string(argv[2]) == "preserved";
  CUlibraryOption option = CU_LIBRARY_BINARY_IS_PRESERVED;
  void* option_value = reinterpret_cast<void*>(1);
  CUdevice dev;
  CUcontext ctx;
  if (cuInit(0) || cuDeviceGet(&dev, 0) || cuDevicePrimaryCtxRetain(&ctx, dev) ||
      cuCtxSetCurrent(ctx))
    return 1;
  std::printf("%10s %8s %8s %8s %8s %8s %s\n", "bytes", "read", "sha256", "load", "kernels",
              "first", "file");
  double total[4] = {};
  for (const auto& entry : std::filesystem::directory_iterator(argv[1])) {
    if (!entry.is_regular_file()) continue;
    Clock::time_point t = Clock::now();
    std::ifstream in(entry.path(), std::ios::binary);
    std::string image((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const double read = ms_since(&t);
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(image.data()), image.size(), digest);
    const double hash = ms_since(&t);
    CUlibrary lib = nullptr;
    const CUresult rc =
        cuLibraryLoadData(&lib, image.data(), nullptr, nullptr, 0, preserved ? &option : nullptr,
                          preserved ? &option_value : nullptr, preserved ? 1 : 0);
    const double load = ms_since(&t);
    unsigned count = 0;
    const double first = rc == CUDA_SUCCESS ? first_kernel(lib, dev, &count) : 0;
    std::printf("%10zu %8.2f %8.2f %8.2f %8u %8.2f %s%s\n", image.size(), read, hash, load, count,
                first, entry.path().filename().c_str(), rc ? " (not a library)" : "");
    const double steps[4] = {read, hash, load, first};
    for (int i = 0; i < 4; ++i) total[i] += steps[i];
    if (lib) cuLibraryUnload(lib);
  }
  std::printf("total ms: read %.1f, sha256 %.1f, load %.1f, first kernels %.1f\n", total[0],
              total[1], total[2], total[3]);
  return 0;
}
