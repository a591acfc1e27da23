// One-way requests held back by the client and sent together (outbox.h):
// the server must see every one, in order, soon, exactly once. The double's
// launch log says what the server ran.
#include <cuda.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "primary_context_test.h"
#include "sent_bytes.h"
#include "shared_server.h"

namespace {

using Clock = std::chrono::steady_clock;

std::string hex(const void* data, size_t size) {
  std::string out;
  for (size_t i = 0; i < size; ++i) {
    const uint8_t byte = static_cast<const uint8_t*>(data)[i];
    out += "0123456789abcdef"[byte >> 4];
    out += "0123456789abcdef"[byte & 15];
  }
  return out;
}

std::string launch_log() {
  std::ifstream in(scuda::test::shared_server().launch_log());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The launch lines of kernel `fill` logged after `from` bytes of the log.
std::vector<std::string> fills_since(size_t from) {
  std::vector<std::string> lines;
  std::istringstream in(launch_log().substr(std::min(from, launch_log().size())));
  for (std::string line; std::getline(in, line);)
    if (line.rfind("launch fill ", 0) == 0) lines.push_back(line);
  return lines;
}

size_t count_of(const std::vector<std::string>& lines, const std::string& needle) {
  size_t n = 0;
  for (const std::string& line : lines) n += line.find(needle) != std::string::npos;
  return n;
}

class OneWayTest : public scuda::test::PrimaryContextTest {
 protected:
  void SetUp() override {
    PrimaryContextTest::SetUp();
    if (HasFatalFailure()) return;
    ASSERT_EQ(cuModuleLoadData(&mod_, "scuda-double-module\nkernel fill 8 4 4\n"), CUDA_SUCCESS);
    ASSERT_EQ(cuModuleGetFunction(&fill_, mod_, "fill"), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAlloc(&buf_, 64), CUDA_SUCCESS);
    log_start_ = launch_log().size();
  }
  void TearDown() override {
    cuMemFree(buf_);
    cuModuleUnload(mod_);
    PrimaryContextTest::TearDown();
  }
  // Launches fill(buf, value, 16); the log shows its parameters as `params(value)`.
  CUresult launch(unsigned value) {
    int n = 16;
    void* params[] = {&buf_, &value, &n};
    return cuLaunchKernel(fill_, 1, 1, 1, 16, 1, 1, 0, nullptr, params, nullptr);
  }
  std::string params(unsigned value) const {
    int n = 16;
    return "params=" + hex(&buf_, 8) + hex(&value, 4) + hex(&n, 4);
  }

  CUmodule mod_ = nullptr;
  CUfunction fill_ = nullptr;
  CUdeviceptr buf_ = 0;
  size_t log_start_ = 0;
};

// Thousands of launches span many batches; the server runs each once, in
// the order they were made.
TEST_F(OneWayTest, ManyLaunchesRunInOrder) {
  const unsigned kLaunches = 3000;
  for (unsigned i = 0; i < kLaunches; ++i) ASSERT_EQ(launch(1000 + i), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  const std::vector<std::string> lines = fills_since(log_start_);
  ASSERT_EQ(lines.size(), kLaunches);
  for (unsigned i = 0; i < kLaunches; ++i)
    ASSERT_NE(lines[i].find(params(1000 + i)), std::string::npos) << i << ": " << lines[i];
}

// Launches spaced as an eager PyTorch step spaces them, tens of µs apart,
// leave from the outbox's thread: each written by the launching thread cost
// it a loopback write of several µs.
TEST_F(OneWayTest, SpacedLaunchesMakeNoWriteOnTheLaunchingThread) {
  ASSERT_EQ(launch(0), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  const uint64_t before = scuda::test::sends_on_this_thread();
  const unsigned kLaunches = 200;
  for (unsigned i = 0; i < kLaunches; ++i) {
    const Clock::time_point until = Clock::now() + std::chrono::microseconds(50);
    while (Clock::now() < until) {
    }
    ASSERT_EQ(launch(2000 + i), CUDA_SUCCESS);
  }
  EXPECT_EQ(scuda::test::sends_on_this_thread() - before, 0u);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  const std::vector<std::string> lines = fills_since(log_start_);
  ASSERT_EQ(lines.size(), kLaunches + 1);
  for (unsigned i = 0; i < kLaunches; ++i)
    ASSERT_NE(lines[i + 1].find(params(2000 + i)), std::string::npos) << i << ": " << lines[i + 1];
}

// A burst of launches is held; no later call sends it, so the outbox's own
// thread must, promptly.
TEST_F(OneWayTest, LaunchesWithNoLaterCallReachTheServer) {
  const Clock::time_point start = Clock::now();
  for (int i = 0; i < 3; ++i) ASSERT_EQ(launch(0x10ae), CUDA_SUCCESS);
  while (fills_since(log_start_).size() < 3 && Clock::now() - start < std::chrono::seconds(5))
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  const auto waited = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start);
  const std::vector<std::string> lines = fills_since(log_start_);
  ASSERT_EQ(lines.size(), 3u) << "not all run after " << waited.count() << " us";
  EXPECT_EQ(count_of(lines, params(0x10ae)), 3u);
  EXPECT_LT(waited, std::chrono::seconds(1));
  RecordProperty("launches_seen_after_us", static_cast<int>(waited.count()));
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
}

// A child shares its parent's connection: what the parent held when it
// forked must reach the server once, whatever the child does at exit.
TEST_F(OneWayTest, AForkedChildNeverResendsItsParentsLaunches) {
  for (int i = 0; i < 5; ++i) ASSERT_EQ(launch(0xf0f0), CUDA_SUCCESS);
  const pid_t pid = fork();
  if (pid == 0) std::exit(0);  // runs the client's exit handlers
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(count_of(fills_since(log_start_), params(0xf0f0)), 5u);
}

// A forked child shares its parent's connection, so it has no session of
// its own: its CUDA calls fail, as in a child of NVIDIA's driver, and none
// of them reaches the server in its parent's session.
TEST_F(OneWayTest, AForkedChildsCudaCallsFailAndLeaveItsParentsSessionAlone) {
  ASSERT_EQ(launch(0xc0c0), CUDA_SUCCESS);
  const pid_t pid = fork();
  if (pid == 0) {
    const bool refused = cuCtxSynchronize() == CUDA_ERROR_NOT_INITIALIZED &&
                         launch(0x0bad) == CUDA_ERROR_NOT_INITIALIZED &&
                         cuInit(0) == CUDA_ERROR_NOT_INITIALIZED;
    std::exit(refused ? 0 : 1);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  ASSERT_EQ(launch(0xc0c1), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  const std::vector<std::string> fills = fills_since(log_start_);
  EXPECT_EQ(count_of(fills, params(0x0bad)), 0u);
  EXPECT_EQ(count_of(fills, params(0xc0c0)), 1u);
  EXPECT_EQ(count_of(fills, params(0xc0c1)), 1u);
}

// A program that launches and returns from main without synchronizing: the
// launch still reaches the server.
TEST_F(OneWayTest, LaunchesHeldAtExitAreSent) {
  const std::string tool = CLIENT_TOOL;
  const scuda::test::Output o = scuda::test::run_program(
      {tool, "launch-exit"}, {"SCUDA_SERVER=" + scuda::test::shared_server().address()});
  ASSERT_EQ(o.exit_code, 0) << o.out << o.err;
  const unsigned value = 0x5ca1ab1e;
  const Clock::time_point start = Clock::now();
  while (count_of(fills_since(log_start_), hex(&value, 4)) < 50 &&
         Clock::now() - start < std::chrono::seconds(5))
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(count_of(fills_since(log_start_), hex(&value, 4)), 50u);
}

}  // namespace
