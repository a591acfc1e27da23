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

}  // namespace
