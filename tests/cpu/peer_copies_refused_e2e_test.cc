// A server started with --no-peer-copies (server/copies/peer_copy_ops.cc): copies
// between its devices and another server's still arrive whole, staged
// through the client, in either direction, and no session waits for a
// direct copy that one end refused.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "server_process.h"

namespace {

constexpr size_t kBuffer = size_t{16} << 20;  // large enough to go directly

scuda::test::ServerProcess* willing = nullptr;
scuda::test::ServerProcess* refusing = nullptr;

class TwoServers : public ::testing::Environment {
 public:
  void SetUp() override {
    willing = new scuda::test::ServerProcess();
    refusing = new scuda::test::ServerProcess({"--no-peer-copies"});
    setenv("SCUDA_SERVER", (willing->address() + "," + refusing->address()).c_str(), 1);
    unsetenv("SCUDA_PICK");
    unsetenv("SCUDA_PEER_COPIES");
    unsetenv("CUDA_VISIBLE_DEVICES");
  }
  void TearDown() override {
    delete willing;
    delete refusing;
  }
};

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new TwoServers);

std::vector<uint8_t> random_bytes(size_t size, unsigned seed) {
  std::vector<uint8_t> bytes(size);
  std::mt19937 random(seed);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(random());
  return bytes;
}

TEST(PeerCopiesRefused, CopiesBothWaysAreStagedWhole) {
  ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
  CUcontext ctx[2] = {};
  CUdeviceptr buf[2] = {};
  for (CUdevice dev = 0; dev < 2; ++dev) {
    ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx[dev], dev), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(ctx[dev]), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAlloc(&buf[dev], kBuffer), CUDA_SUCCESS);
  }
  for (const int from : {0, 1}) {
    const int to = 1 - from;
    const std::vector<uint8_t> bytes = random_bytes(kBuffer, 7 + from);
    ASSERT_EQ(cuCtxSetCurrent(ctx[from]), CUDA_SUCCESS);
    ASSERT_EQ(cuMemcpyHtoD(buf[from], bytes.data(), bytes.size()), CUDA_SUCCESS);
    ASSERT_EQ(cuMemcpyPeer(buf[to], ctx[to], buf[from], ctx[from], bytes.size()), CUDA_SUCCESS);
    std::vector<uint8_t> arrived(bytes.size());
    ASSERT_EQ(cuCtxSetCurrent(ctx[to]), CUDA_SUCCESS);
    ASSERT_EQ(cuMemcpyDtoH(arrived.data(), buf[to], arrived.size()), CUDA_SUCCESS);
    EXPECT_EQ(arrived, bytes) << "from device " << from;
  }
  const std::string refused = refusing->log(), other = willing->log();
  EXPECT_NE(refused.find("runs with --no-peer-copies"), std::string::npos) << refused;
  EXPECT_EQ(other.find("did not come"), std::string::npos) << other;
  EXPECT_EQ(refused.find("did not come"), std::string::npos) << refused;
  for (CUdevice dev = 0; dev < 2; ++dev) {
    cuCtxSetCurrent(ctx[dev]);
    cuMemFree(buf[dev]);
    cuDevicePrimaryCtxRelease(dev);
  }
}

}  // namespace
