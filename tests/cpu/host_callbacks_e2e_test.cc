// Host callbacks end to end: a callback runs on this process's callback
// channel as soon as the server's stream reaches it, sees the copies queued
// ahead of it, and the stream's later work waits until it returns.
#include <cuda.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "primary_context_test.h"
#include "shared_server.h"

namespace {

using namespace std::chrono_literals;

// Something a callback raises and a test (or another callback) waits for.
class Flag {
 public:
  // Notifies under the lock: a waiter that wakes may destroy the flag at
  // once, so the raiser must be done with it by then.
  void raise() {
    std::lock_guard lock(mu_);
    raised_ = true;
    cv_.notify_all();
  }
  bool wait(std::chrono::milliseconds timeout = 10s) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [this] { return raised_; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool raised_ = false;
};

class HostCallbackTest : public scuda::test::PrimaryContextTest {
 protected:
  void SetUp() override {
    PrimaryContextTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_EQ(cuStreamCreate(&stream_, 0), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAlloc(&word_, sizeof(uint32_t)), CUDA_SUCCESS);
    ASSERT_EQ(cuMemsetD32(word_, 1, 1), CUDA_SUCCESS);
  }
  void TearDown() override {
    cuMemFree(word_);
    cuStreamDestroy(stream_);
    PrimaryContextTest::TearDown();
  }

  CUstream stream_ = nullptr;
  CUdeviceptr word_ = 0;  // one uint32_t of device memory, 1 to start with
};

// What a callback saw of a host word, and that it ran.
struct Look {
  const uint32_t* host;
  uint32_t seen = 0;
  std::chrono::milliseconds delay{0};
  Flag ran{};
};

void look(void* p) {
  Look* l = static_cast<Look*>(p);
  std::this_thread::sleep_for(l->delay);
  l->seen = *l->host;
  l->ran.raise();
}

// A program may wait for its callback on a flag of its own, with no CUDA
// call to give the client a chance to run it.
TEST_F(HostCallbackTest, RunsWithoutAnySynchronizingCall) {
  Flag ran{};
  ASSERT_EQ(cuLaunchHostFunc(
                stream_, [](void* p) { static_cast<Flag*>(p)->raise(); }, &ran),
            CUDA_SUCCESS);
  EXPECT_TRUE(ran.wait());
  ASSERT_EQ(cuStreamSynchronize(stream_), CUDA_SUCCESS);
}

// The copy queued ahead of a callback has landed when it runs, though the
// program is not reading replies meanwhile.
TEST_F(HostCallbackTest, SeesTheCopyQueuedAheadOfIt) {
  uint32_t host = 0;
  Look l{&host};
  ASSERT_EQ(cuMemsetD32Async(word_, 7, 1, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoHAsync(&host, word_, sizeof host, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(stream_, look, &l), CUDA_SUCCESS);
  ASSERT_TRUE(l.ran.wait());
  EXPECT_EQ(l.seen, 7u);
  ASSERT_EQ(cuStreamSynchronize(stream_), CUDA_SUCCESS);
}

// A copy into registered memory lands in its mirror in the session; the
// callback after it still sees its bytes, carried with the "reached".
TEST_F(HostCallbackTest, SeesACopyIntoRegisteredMemoryQueuedAheadOfIt) {
  alignas(4096) static uint32_t page[1024] = {};
  ASSERT_EQ(cuMemHostRegister(page, sizeof page, 0), CUDA_SUCCESS);
  Look l{&page[5]};
  ASSERT_EQ(cuMemsetD32Async(word_, 9, 1, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoHAsync(&page[5], word_, sizeof(uint32_t), stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(stream_, look, &l), CUDA_SUCCESS);
  ASSERT_TRUE(l.ran.wait());
  EXPECT_EQ(l.seen, 9u);
  ASSERT_EQ(cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_EQ(page[5], 9u);
  ASSERT_EQ(cuMemHostUnregister(page), CUDA_SUCCESS);
}

// Changes larger than a frame may carry go ahead of the "reached" a window
// a frame: a callback after a memset of 72 MiB of registered memory sees
// every word of it.
TEST_F(HostCallbackTest, SeesChangesToRegisteredMemoryLargerThanAFrame) {
  const size_t bytes = 72u << 20, words = bytes / sizeof(uint32_t);
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
  auto* host = static_cast<uint32_t*>(p);
  ASSERT_EQ(cuMemHostRegister(p, bytes, 0), CUDA_SUCCESS);
  CUdeviceptr device = 0;
  ASSERT_EQ(cuMemHostGetDevicePointer(&device, p, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32Async(device, 0x05050505, words, stream_), CUDA_SUCCESS);
  struct Count {
    const uint32_t* words;
    size_t n;
    size_t wrong = 0;
    Flag ran;
  } count{host, words, 0, {}};
  auto check = [](void* data) {
    auto* c = static_cast<Count*>(data);
    for (size_t i = 0; i < c->n; ++i) c->wrong += c->words[i] != 0x05050505u;
    c->ran.raise();
  };
  ASSERT_EQ(cuLaunchHostFunc(stream_, check, &count), CUDA_SUCCESS);
  ASSERT_TRUE(count.ran.wait());
  EXPECT_EQ(count.wrong, 0u);
  ASSERT_EQ(cuStreamSynchronize(stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuMemHostUnregister(p), CUDA_SUCCESS);
  munmap(p, bytes);
}

// The work queued after a callback waits for it: the callback, slow to look,
// still sees the host word as it was, while the program has already asked
// to synchronize the stream.
TEST_F(HostCallbackTest, LaterWorkWaitsUntilItReturns) {
  uint32_t host = 0;
  Look l{&host, 0, 200ms};
  ASSERT_EQ(cuLaunchHostFunc(stream_, look, &l), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32Async(word_, 2, 1, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoHAsync(&host, word_, sizeof host, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_TRUE(l.ran.wait(0ms));
  EXPECT_EQ(l.seen, 0u);
  EXPECT_EQ(host, 2u);
}

// A callback that holds its stream until the program says so: meanwhile the
// program queues a copy and a second callback, which runs after the first
// and sees the copy.
TEST_F(HostCallbackTest, ACallbackMayHoldItsStreamWhileTheProgramQueuesMore) {
  struct Gate {
    Flag open;
    bool opened = false;
    std::vector<int> order;
  } gate;
  uint32_t host = 0;
  Look l{&host};
  ASSERT_EQ(cuLaunchHostFunc(
                stream_,
                [](void* p) {
                  Gate* g = static_cast<Gate*>(p);
                  g->opened = g->open.wait();
                  g->order.push_back(1);
                },
                &gate),
            CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32Async(word_, 5, 1, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoHAsync(&host, word_, sizeof host, stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(stream_, look, &l), CUDA_SUCCESS);
  auto second = [](CUstream, CUresult status, void* p) {
    static_cast<Gate*>(p)->order.push_back(status == CUDA_SUCCESS ? 2 : -1);
  };
  ASSERT_EQ(cuStreamAddCallback(stream_, second, &gate, 0), CUDA_SUCCESS);
  gate.open.raise();
  ASSERT_EQ(cuStreamSynchronize(stream_), CUDA_SUCCESS);
  EXPECT_TRUE(gate.opened);
  EXPECT_EQ(gate.order, (std::vector<int>{1, 2}));
  EXPECT_EQ(l.seen, 5u);
}

}  // namespace

namespace {

// What a callback writes into page-locked memory, after a delay.
struct Stage {
  uint32_t* host;
  uint32_t value;
};

// An async copy from page-locked memory reads it in stream order: a callback
// queued ahead of the copy fills the buffer first (XLA's transfers), even
// when it runs after the copy was called.
TEST_F(HostCallbackTest, AsyncCopiesFromPageLockedMemoryReadItInStreamOrder) {
  uint32_t* staging = nullptr;
  ASSERT_EQ(cuMemAllocHost(reinterpret_cast<void**>(&staging), 4096), CUDA_SUCCESS);
  *staging = 5;
  Stage stage{staging, 42};
  ASSERT_EQ(cuLaunchHostFunc(
                stream_,
                [](void* p) {
                  std::this_thread::sleep_for(50ms);
                  auto* s = static_cast<Stage*>(p);
                  *s->host = s->value;
                },
                &stage),
            CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoDAsync(word_, staging, sizeof(uint32_t), stream_), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream_), CUDA_SUCCESS);
  uint32_t got = 0;
  ASSERT_EQ(cuMemcpyDtoH(&got, word_, sizeof got), CUDA_SUCCESS);
  EXPECT_EQ(got, 42u);
  EXPECT_EQ(cuMemFreeHost(staging), CUDA_SUCCESS);
}

}  // namespace
