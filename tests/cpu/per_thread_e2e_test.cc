// A program built for the per-thread default stream: with
// CUDA_API_PER_THREAD_DEFAULT_STREAM cuda.h maps each stream-ordered call to
// its _ptsz/_ptds variant, whose exported entry point the generator makes
// (codegen, `twins`). Each must reach the session as the per-thread call,
// which the double's variants log ("per-thread NAME").
#define CUDA_API_PER_THREAD_DEFAULT_STREAM 1
#include <cuda.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "primary_context_test.h"
#include "shared_server.h"

namespace {

const char kModule[] = "scuda-double-module\nkernel fill 8 4 4\n";

std::string double_log() {
  std::ifstream in(scuda::test::shared_server().launch_log());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The per-thread variants logged after the first `from` bytes of the log.
std::string per_thread_since(size_t from) {
  const std::string log = double_log();
  std::istringstream in(log.substr(std::min(from, log.size())));
  std::string seen;
  for (std::string line; std::getline(in, line);)
    if (line.rfind("per-thread ", 0) == 0) seen += line.substr(11) + " ";
  return seen;
}

class PerThreadTest : public scuda::test::PrimaryContextTest {};

TEST_F(PerThreadTest, CopiesAndLaunchesOnTheNullStreamTakeTheThreadsStream) {
  CUmodule mod = nullptr;
  CUfunction fill = nullptr;
  CUdeviceptr dev = 0;
  const int n = 4096;
  ASSERT_EQ(cuModuleLoadData(&mod, kModule), CUDA_SUCCESS);
  ASSERT_EQ(cuModuleGetFunction(&fill, mod, "fill"), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&dev, n * sizeof(unsigned)), CUDA_SUCCESS);
  const size_t from = double_log().size();

  std::vector<unsigned> host(n, 3);
  ASSERT_EQ(cuMemcpyHtoDAsync(dev, host.data(), n * sizeof(unsigned), nullptr), CUDA_SUCCESS);
  unsigned value = 7;
  int count = n / 2;
  void* params[] = {&dev, &value, &count};
  ASSERT_EQ(cuLaunchKernel(fill, 1, 1, 1, 32, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoHAsync(host.data(), dev, n * sizeof(unsigned), nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(host[0], 7u);
  EXPECT_EQ(host[n - 1], 3u);

  const std::string seen = per_thread_since(from);
  for (const char* name : {"cuMemcpyHtoDAsync_v2_ptsz", "cuLaunchKernelEx_ptsz",
                           "cuStreamSynchronize_ptsz", "cuMemcpyDtoHAsync_v2_ptsz"})
    EXPECT_NE(seen.find(name), std::string::npos) << name << " not in: " << seen;
  EXPECT_EQ(cuMemFree(dev), CUDA_SUCCESS);
  EXPECT_EQ(cuModuleUnload(mod), CUDA_SUCCESS);
}

TEST_F(PerThreadTest, EventsQueriesAndHostFunctionsTakeTheThreadsStream) {
  CUevent event = nullptr;
  ASSERT_EQ(cuEventCreate(&event, 0), CUDA_SUCCESS);
  const size_t from = double_log().size();
  ASSERT_EQ(cuEventRecord(event, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecordWithFlags(event, nullptr, 0), CUDA_SUCCESS);
  static int ran = 0;
  ASSERT_EQ(cuLaunchHostFunc(
                nullptr, [](void* p) { ++*static_cast<int*>(p); }, &ran),
            CUDA_SUCCESS);
  ASSERT_EQ(cuStreamQuery(nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(ran, 1);
  const std::string seen = per_thread_since(from);
  for (const char* name :
       {"cuEventRecord_ptsz", "cuEventRecordWithFlags_ptsz", "cuLaunchHostFunc_ptsz"})
    EXPECT_NE(seen.find(name), std::string::npos) << name << " not in: " << seen;
  EXPECT_EQ(cuEventDestroy(event), CUDA_SUCCESS);
}

TEST_F(PerThreadTest, DeviceToDeviceAnd2DCopiesTakeTheThreadsStream) {
  const size_t n = 64 * 16;
  CUdeviceptr a = 0, b = 0;
  ASSERT_EQ(cuMemAlloc(&a, n), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&b, n), CUDA_SUCCESS);
  std::vector<unsigned char> host(n);
  for (size_t i = 0; i < n; ++i) host[i] = static_cast<unsigned char>(i * 7);
  ASSERT_EQ(cuMemcpyHtoD(a, host.data(), n), CUDA_SUCCESS);
  const size_t from = double_log().size();
  ASSERT_EQ(cuMemcpyDtoD(b, a, n), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoDAsync(b, a, n, nullptr), CUDA_SUCCESS);
  CUDA_MEMCPY2D copy{};
  copy.srcMemoryType = copy.dstMemoryType = CU_MEMORYTYPE_DEVICE;
  copy.srcDevice = a;
  copy.dstDevice = b;
  copy.srcPitch = copy.dstPitch = 64;
  copy.WidthInBytes = 64;
  copy.Height = 16;
  ASSERT_EQ(cuMemcpy2D(&copy), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpy2DAsync(&copy, nullptr), CUDA_SUCCESS);
  std::vector<unsigned char> back(n);
  ASSERT_EQ(cuMemcpyDtoH(back.data(), b, n), CUDA_SUCCESS);
  EXPECT_EQ(back, host);
  const std::string seen = per_thread_since(from);
  for (const char* name : {"cuMemcpyDtoD_v2_ptds", "cuMemcpyDtoDAsync_v2_ptsz",
                           "cuMemcpy2D_v2_ptds", "cuMemcpy2DAsync_v2_ptsz"})
    EXPECT_NE(seen.find(name), std::string::npos) << name << " not in: " << seen;
  EXPECT_EQ(cuMemFree(a), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(b), CUDA_SUCCESS);
}

}  // namespace
