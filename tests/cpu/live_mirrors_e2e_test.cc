// Live mirrors end to end: mapped host memory that a kernel polls while the
// host writes it, as NCCL's kernels and proxies do. The double's echo
// kernel holds the session's request thread until it sees the host's word,
// so only the live mirrors' channel can carry the word there and the answer
// back.
#include <cuda.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <thread>

#include "primary_context_test.h"
#include "shared_server.h"

namespace {

using namespace std::chrono_literals;

// Every mapped block is live here (by default only NCCL's are); set before
// any test starts the client.
const bool kEveryBlockLive = setenv("SCUDA_LIVE_HOST_MEMORY", "all", 1) == 0;
// Threads share the scans on both sides (the server inherits it), as on a
// machine with cores to spare, whatever this one has.
const bool kScanThreads = setenv("SCUDA_LIVE_SCAN_THREADS", "3", 1) == 0;

class LiveMirrorTest : public scuda::test::PrimaryContextTest {
 protected:
  void SetUp() override {
    ASSERT_TRUE(kEveryBlockLive && kScanThreads);
    PrimaryContextTest::SetUp();
    if (HasFatalFailure()) return;
    const char image[] = "scuda-double-module\nkernel echo 8 4\n";
    ASSERT_EQ(cuModuleLoadData(&module_, image), CUDA_SUCCESS);
    ASSERT_EQ(cuModuleGetFunction(&echo_, module_, "echo"), CUDA_SUCCESS);
  }
  void TearDown() override {
    if (module_) cuModuleUnload(module_);
    PrimaryContextTest::TearDown();
  }

  // Launches echo on `words` (one-way: the call returns before it runs).
  CUresult launch_echo(unsigned* words, int ms) {
    CUdeviceptr device = 0;
    if (CUresult rc = cuMemHostGetDevicePointer(&device, words, 0)) return rc;
    void* params[] = {&device, &ms};
    return cuLaunchKernel(echo_, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr);
  }

  CUmodule module_ = nullptr;
  CUfunction echo_ = nullptr;
};

// The host's answer is the kernel's second word, read with no CUDA call.
bool answered(const unsigned* words, unsigned want, std::chrono::seconds within) {
  const auto until = std::chrono::steady_clock::now() + within;
  while (std::chrono::steady_clock::now() < until) {
    if (std::atomic_ref<const unsigned>(words[1]).load() == want) return true;
    std::this_thread::sleep_for(1ms);
  }
  return false;
}

TEST_F(LiveMirrorTest, AKernelAndTheHostTalkThroughMappedMemoryWhileItRuns) {
  void* p = nullptr;
  ASSERT_EQ(cuMemHostAlloc(&p, 4096, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
            CUDA_SUCCESS);
  auto* words = static_cast<unsigned*>(p);
  ASSERT_EQ(launch_echo(words, 10000), CUDA_SUCCESS);
  std::this_thread::sleep_for(50ms);  // the kernel is running, waiting for the host
  std::atomic_ref<unsigned>(words[0]).store(41);
  EXPECT_TRUE(answered(words, 42, 10s)) << "the kernel's answer never reached the host";
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(words[1], 42u);
  EXPECT_EQ(cuMemFreeHost(p), CUDA_SUCCESS);
}

// Several rounds on one block, each word changed by one side at a time, as
// a connection's counters are: nothing stale comes back over a newer value.
TEST_F(LiveMirrorTest, RoundAfterRoundEachSideSeesTheOthersLatestWords) {
  void* p = nullptr;
  ASSERT_EQ(cuMemHostAlloc(&p, 1 << 20, CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
  auto* words = static_cast<unsigned*>(p) + 1000;
  for (unsigned round = 1; round <= 5; ++round) {
    std::atomic_ref<unsigned>(words[0]).store(0);
    ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    ASSERT_EQ(launch_echo(words, 10000), CUDA_SUCCESS);
    std::atomic_ref<unsigned>(words[0]).store(round * 10);
    ASSERT_TRUE(answered(words, round * 10 + 1, 10s)) << "round " << round;
  }
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFreeHost(p), CUDA_SUCCESS);
}

// Blocks freed while their words travel leave the channel working: the
// session drops words of a mirror that is gone, and a block allocated at a
// freed one's address starts clean.
TEST_F(LiveMirrorTest, BlocksComeAndGoWhileTheChannelTurns) {
  void* keep = nullptr;
  ASSERT_EQ(cuMemHostAlloc(&keep, 4096, CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
  for (int i = 0; i < 20; ++i) {
    void* p = nullptr;
    ASSERT_EQ(cuMemHostAlloc(&p, 65536, CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
    auto* words = static_cast<unsigned*>(p);
    EXPECT_EQ(words[7], 0u) << "round " << i;  // not a freed block's words
    for (int w = 0; w < 16384; w += 97) words[w] = 1000 + i;
    ASSERT_EQ(cuMemFreeHost(p), CUDA_SUCCESS);
  }
  auto* words = static_cast<unsigned*>(keep);
  ASSERT_EQ(launch_echo(words, 10000), CUDA_SUCCESS);
  std::atomic_ref<unsigned>(words[0]).store(5);
  EXPECT_TRUE(answered(words, 6, 10s)) << "the channel no longer turns";
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFreeHost(keep), CUDA_SUCCESS);
}

// Registered memory is kept in step only around requests: the kernel never
// sees the host's word, which shows that the channel is what carries it.
TEST_F(LiveMirrorTest, RegisteredMemoryIsNotLiveAndTheKernelWaitsInVain) {
  alignas(4096) static unsigned page[1024];
  ASSERT_EQ(cuMemHostRegister(page, sizeof page, CU_MEMHOSTREGISTER_DEVICEMAP), CUDA_SUCCESS);
  ASSERT_EQ(launch_echo(page, 300), CUDA_SUCCESS);
  std::atomic_ref<unsigned>(page[0]).store(7);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_LAUNCH_TIMEOUT);
  EXPECT_EQ(page[1], 0u);
  EXPECT_EQ(cuMemHostUnregister(page), CUDA_SUCCESS);
}

}  // namespace
