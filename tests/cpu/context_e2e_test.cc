// End to end against the driver double: contexts created with parameters,
// and the profiler's calls. Nothing here runs on a GPU.
#include <cuda.h>
#include <cudaProfiler.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "primary_context_test.h"

#include "shared_server.h"

namespace {

class ContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDeviceGet(&dev_, 0), CUDA_SUCCESS);
  }
  CUdevice dev_ = 0;
};

// cudart 13 and the driver-API samples pass an empty parameter struct.
TEST_F(ContextTest, EmptyCreateParamsMakeAContext) {
  CUctxCreateParams params{};
  CUcontext ctx = nullptr;
  ASSERT_EQ(cuCtxCreate_v4(&ctx, &params, 0, dev_), CUDA_SUCCESS);
  CUcontext current = nullptr;
  EXPECT_EQ(cuCtxGetCurrent(&current), CUDA_SUCCESS);
  EXPECT_EQ(current, ctx);
  CUdeviceptr p = 0;
  EXPECT_EQ(cuMemAlloc_v2(&p, 256), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree_v2(p), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxDestroy_v2(ctx), CUDA_SUCCESS);
}

// The server's driver gets the affinity the program asked for.
TEST_F(ContextTest, ExecAffinityReachesTheServersDriver) {
  CUexecAffinityParam affinity{};
  affinity.type = CU_EXEC_AFFINITY_TYPE_SM_COUNT;
  affinity.param.smCount.val = 2;
  CUctxCreateParams params{};
  params.execAffinityParams = &affinity;
  params.numExecAffinityParams = 1;
  CUcontext ctx = nullptr;
  ASSERT_EQ(cuCtxCreate_v4(&ctx, &params, 0, dev_), CUDA_SUCCESS);
  CUexecAffinityParam got{};
  EXPECT_EQ(cuCtxGetExecAffinity(&got, CU_EXEC_AFFINITY_TYPE_SM_COUNT), CUDA_SUCCESS);
  EXPECT_EQ(got.param.smCount.val, 2u);
  EXPECT_EQ(cuCtxDestroy_v2(ctx), CUDA_SUCCESS);

  affinity.param.smCount.val = 1000;  // more SMs than the device has
  EXPECT_EQ(cuCtxCreate_v4(&ctx, &params, 0, dev_), CUDA_ERROR_INVALID_VALUE);
  params.numExecAffinityParams = 100;  // longer than the protocol carries
  EXPECT_EQ(cuCtxCreate_v4(&ctx, &params, 0, dev_), CUDA_ERROR_INVALID_VALUE);
}

// CIG shares a graphics API's object of the client, which cannot cross.
TEST_F(ContextTest, CigParamsAreRefused) {
  CUctxCigParam cig{};
  CUctxCreateParams params{};
  params.cigParams = &cig;
  CUcontext ctx = nullptr;
  EXPECT_EQ(cuCtxCreate_v4(&ctx, &params, 0, dev_), CUDA_ERROR_NOT_SUPPORTED);
}

std::string double_log() {
  std::ifstream in(scuda::test::shared_server().launch_log());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

using ProfilerTest = scuda::test::PrimaryContextTest;

// Ranges reach the server's driver, so that a profiler there sees them.
TEST_F(ProfilerTest, StartAndStopReachTheServersDriver) {
  const size_t from = double_log().size();
  EXPECT_EQ(cuProfilerStart(), CUDA_SUCCESS);
  EXPECT_EQ(cuProfilerStop(), CUDA_SUCCESS);
  EXPECT_EQ(double_log().substr(from), "profiler start\nprofiler stop\n");
}

// Programs find the profiler by name, as matrixMulDynlinkJIT does with
// dlsym, and cudart through cuGetProcAddress.
TEST_F(ProfilerTest, FoundByNameAndByProcAddress) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  EXPECT_EQ(dlsym(lib, "cuProfilerStart"), reinterpret_cast<void*>(&cuProfilerStart));
  EXPECT_EQ(dlsym(lib, "cuProfilerStop"), reinterpret_cast<void*>(&cuProfilerStop));
  dlclose(lib);
  void* fn = nullptr;
  CUdriverProcAddressQueryResult found{};
  ASSERT_EQ(cuGetProcAddress_v2("cuProfilerStop", &fn, 13000, 0, &found), CUDA_SUCCESS);
  EXPECT_EQ(found, CU_GET_PROC_ADDRESS_SUCCESS);
  EXPECT_EQ(fn, reinterpret_cast<void*>(&cuProfilerStop));
}

}  // namespace
