// End to end with lz4 forced on (SCUDA_COMPRESS=on, set through
// scuda_set_compression): host<->device copies of compressible and random
// data, of sizes across chunk boundaries, sync and async, from the stand-in
// libcuda through a real `scuda server` to the driver test double.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "primary_context_test.h"
#include "protocol/frame.h"
#include "shared_server.h"

extern "C" int scuda_set_compression(const char* mode);

namespace {

using scuda::protocol::kChunkSize;

enum class Data { kZeros, kFloats, kRandom };

std::vector<uint8_t> make(Data kind, size_t size) {
  std::vector<uint8_t> v(size, 0);
  std::mt19937_64 rng(size);
  for (size_t i = 0; i + sizeof(float) <= size; i += sizeof(float)) {
    if (kind == Data::kFloats) {
      const float f = 1.0f + static_cast<float>(i / sizeof(float) % 64);
      std::memcpy(&v[i], &f, sizeof f);
    } else if (kind == Data::kRandom) {
      const uint32_t r = static_cast<uint32_t>(rng());
      std::memcpy(&v[i], &r, sizeof r);
    }
  }
  return v;
}

// Not multiples of the chunk; the first two cross chunk boundaries, the
// third is one small chunk, the last too small to compress.
const size_t kSizes[] = {2 * kChunkSize + 12345, kChunkSize + 1, 100000, 100};

class CompressionTest : public scuda::test::PrimaryContextTest,
                        public ::testing::WithParamInterface<Data> {
 protected:
  void SetUp() override {
    PrimaryContextTest::SetUp();
    ASSERT_EQ(scuda_set_compression("on"), 0);
  }
  void TearDown() override {
    scuda_set_compression("auto");
    PrimaryContextTest::TearDown();
  }
};

TEST_P(CompressionTest, SyncCopiesRoundTrip) {
  for (size_t size : kSizes) {
    const std::vector<uint8_t> data = make(GetParam(), size);
    CUdeviceptr d = 0;
    ASSERT_EQ(cuMemAlloc(&d, size), CUDA_SUCCESS);
    ASSERT_EQ(cuMemsetD8(d, 0xee, size), CUDA_SUCCESS);
    ASSERT_EQ(cuMemcpyHtoD(d, data.data(), size), CUDA_SUCCESS);
    std::vector<uint8_t> back(size, 0x55);
    ASSERT_EQ(cuMemcpyDtoH(back.data(), d, size), CUDA_SUCCESS);
    EXPECT_TRUE(back == data) << size;
    EXPECT_EQ(cuMemFree(d), CUDA_SUCCESS);
  }
}

TEST_P(CompressionTest, AsyncCopiesRoundTripOnAStream) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  for (size_t size : kSizes) {
    const std::vector<uint8_t> data = make(GetParam(), size);
    CUdeviceptr d = 0;
    ASSERT_EQ(cuMemAlloc(&d, size), CUDA_SUCCESS);
    ASSERT_EQ(cuMemcpyHtoDAsync(d, data.data(), size, stream), CUDA_SUCCESS);
    std::vector<uint8_t> back(size, 0x55);
    ASSERT_EQ(cuMemcpyDtoHAsync(back.data(), d, size, stream), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
    EXPECT_TRUE(back == data) << size;
    EXPECT_EQ(cuMemFree(d), CUDA_SUCCESS);
  }
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
}

// A compressed chunk lands exactly where it should, between bytes that a
// copy of its own never touched.
TEST_P(CompressionTest, ChunksLandAtTheirOffsets) {
  const size_t size = 3 * kChunkSize;
  const std::vector<uint8_t> data = make(GetParam(), kChunkSize + 7);
  CUdeviceptr d = 0;
  ASSERT_EQ(cuMemAlloc(&d, size), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8(d, 0xee, size), CUDA_SUCCESS);
  const size_t at = kChunkSize / 2 + 3;
  ASSERT_EQ(cuMemcpyHtoD(d + at, data.data(), data.size()), CUDA_SUCCESS);
  std::vector<uint8_t> back(size);
  ASSERT_EQ(cuMemcpyDtoH(back.data(), d, size), CUDA_SUCCESS);
  EXPECT_EQ(back[at - 1], 0xee);
  EXPECT_EQ(back[at + data.size()], 0xee);
  EXPECT_TRUE(std::equal(data.begin(), data.end(), back.begin() + at));
  EXPECT_EQ(cuMemFree(d), CUDA_SUCCESS);
}

std::string data_name(const ::testing::TestParamInfo<Data>& info) {
  return info.param == Data::kZeros ? "Zeros" : info.param == Data::kFloats ? "Floats" : "Random";
}

INSTANTIATE_TEST_SUITE_P(Data, CompressionTest,
                         ::testing::Values(Data::kZeros, Data::kFloats, Data::kRandom), data_name);

TEST(CompressionMode, UnknownModesAreRefused) {
  EXPECT_EQ(scuda_set_compression("sometimes"), -1);
  EXPECT_EQ(scuda_set_compression(nullptr), -1);
  EXPECT_EQ(scuda_set_compression("off"), 0);
  EXPECT_EQ(scuda_set_compression("auto"), 0);
}

}  // namespace
