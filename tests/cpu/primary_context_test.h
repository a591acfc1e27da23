// A fixture for end-to-end tests: device 0's primary context, retained and
// current on the test's thread, released after the test.
#pragma once

#include <cuda.h>
#include <gtest/gtest.h>

namespace scuda::test {

class PrimaryContextTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    ASSERT_EQ(cuDeviceGet(&dev_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx_, dev_), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
  }
  void TearDown() override { cuDevicePrimaryCtxRelease(dev_); }

  CUdevice dev_ = 0;
  CUcontext ctx_ = nullptr;
};

}  // namespace scuda::test
