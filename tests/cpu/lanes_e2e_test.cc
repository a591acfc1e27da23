// End to end: large host<->device copies whose bytes cross the lanes
// (docs/protocol.md, "Lanes"), from the stand-in libcuda through a real
// `scuda server` to the driver test double (host RAM; nothing runs on a GPU).
#include <cuda.h>
#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <thread>
#include <vector>

#include "lanes_opened.h"
#include "primary_context_test.h"
#include "protocol/ops.h"
#include "shared_server.h"

extern "C" int scuda_set_compression(const char* mode);
extern "C" uint64_t scuda_lane_bytes();

namespace {

using scuda::protocol::kLaneStripe;

// Not a whole number of stripes, nor of stripes per lane.
constexpr size_t kSize = 9 * kLaneStripe + 12345;

std::vector<uint8_t> random_bytes(size_t size, uint64_t seed) {
  std::vector<uint8_t> v(size);
  std::mt19937_64 rng(seed);
  for (auto& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

class LanesTest : public scuda::test::PrimaryContextTest {
 protected:
  // The first large copy opens the lanes, in the background. lz4 is off:
  // in auto, a link that a loaded machine makes slow could choose it, and
  // lanes carry no lz4.
  void SetUp() override {
    PrimaryContextTest::SetUp();
    ASSERT_EQ(scuda_set_compression("off"), 0);
    ASSERT_EQ(cuMemAlloc(&dev_, kSize), CUDA_SUCCESS);
    ASSERT_NO_FATAL_FAILURE(scuda::test::open_lanes(dev_, kSize));
    ASSERT_EQ(scuda_lanes_open(), 4u);  // SCUDA_LANES's default
  }
  void TearDown() override {
    EXPECT_EQ(cuMemFree(dev_), CUDA_SUCCESS);
    scuda_set_compression("auto");
    PrimaryContextTest::TearDown();
  }
  CUdeviceptr dev_ = 0;
};

TEST_F(LanesTest, SyncCopiesCrossTheLanesIntact) {
  const std::vector<uint8_t> data = random_bytes(kSize, 1);
  const uint64_t before = scuda_lane_bytes();
  ASSERT_EQ(cuMemcpyHtoD(dev_, data.data(), kSize), CUDA_SUCCESS);
  std::vector<uint8_t> back(kSize, 0x55);
  ASSERT_EQ(cuMemcpyDtoH(back.data(), dev_, kSize), CUDA_SUCCESS);
  EXPECT_TRUE(back == data);
  EXPECT_EQ(scuda_lane_bytes() - before, 2 * kSize);
}

TEST_F(LanesTest, AsyncCopiesCrossTheLanesInStreamOrder) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  const std::vector<uint8_t> data = random_bytes(kSize, 2);
  const uint64_t before = scuda_lane_bytes();
  ASSERT_EQ(cuMemsetD8Async(dev_, 0xee, kSize, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoDAsync(dev_, data.data(), kSize, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8Async(dev_ + kSize - 1, 0x11, 1, stream), CUDA_SUCCESS);
  std::vector<uint8_t> back(kSize, 0x55);
  ASSERT_EQ(cuMemcpyDtoHAsync(back.data(), dev_, kSize, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  std::vector<uint8_t> expected = data;
  expected.back() = 0x11;
  EXPECT_TRUE(back == expected);
  EXPECT_EQ(scuda_lane_bytes() - before, 2 * kSize);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
}

// A copy the driver refuses still moves its bytes over every lane, so the
// next copy finds the lanes in step.
TEST_F(LanesTest, RefusedCopiesLeaveTheLanesInStep) {
  const CUdeviceptr nowhere = 0x10;
  std::vector<uint8_t> host = random_bytes(kSize, 3);
  EXPECT_NE(cuMemcpyHtoD(nowhere, host.data(), kSize), CUDA_SUCCESS);
  EXPECT_NE(cuMemcpyDtoH(host.data(), nowhere, kSize), CUDA_SUCCESS);
  EXPECT_EQ(scuda_lanes_open(), 4u);
  const std::vector<uint8_t> data = random_bytes(kSize, 4);
  ASSERT_EQ(cuMemcpyHtoD(dev_, data.data(), kSize), CUDA_SUCCESS);
  std::vector<uint8_t> back(kSize);
  ASSERT_EQ(cuMemcpyDtoH(back.data(), dev_, kSize), CUDA_SUCCESS);
  EXPECT_TRUE(back == data);
}

}  // namespace
