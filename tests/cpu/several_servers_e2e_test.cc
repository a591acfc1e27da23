// Several servers, one list of devices (src/client/pools/servers.h): a client
// given two servers on the driver double, the first with two devices of
// 16 GiB and the second with one of 8 GiB, sees three devices, and each
// call reaches the server of the device, context, stream or memory it names.
#include <cuda.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "device_checks.h"
#include "server_process.h"

extern "C" int scuda_set_peer_copies(int on);

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kGiB = size_t{1} << 30;
constexpr int kDevices = 3;
constexpr size_t kBuffer = 16 * kMiB;
constexpr const char* kModule = "scuda-double-module\nkernel fill 8 4 4\n";

scuda::test::ServerProcess* first = nullptr;
scuda::test::ServerProcess* second = nullptr;

// The double's devices and memory are set before each server starts: its
// sessions inherit them.
class TwoServers : public ::testing::Environment {
 public:
  void SetUp() override {
    setenv("SCUDA_DOUBLE_DEVICES", "2", 1);
    setenv("SCUDA_DOUBLE_TOTAL_MEMORY", std::to_string(16 * kGiB).c_str(), 1);
    first = new scuda::test::ServerProcess();
    setenv("SCUDA_DOUBLE_DEVICES", "1", 1);
    setenv("SCUDA_DOUBLE_TOTAL_MEMORY", std::to_string(8 * kGiB).c_str(), 1);
    // Its log counts the connections that join its sessions (joins()).
    setenv("SCUDA_LOG_LEVEL", "info", 1);
    second = new scuda::test::ServerProcess();
    unsetenv("SCUDA_LOG_LEVEL");
    setenv("SCUDA_SERVER", (first->address() + "," + second->address()).c_str(), 1);
    unsetenv("SCUDA_PICK");
    unsetenv("CUDA_VISIBLE_DEVICES");
  }
  void TearDown() override {
    delete first;
    delete second;
  }
};

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new TwoServers);

// The bytes the sessions of the server at `address` received from their
// clients and sent to them, from its status.
std::pair<uint64_t, uint64_t> client_bytes(const std::string& address) {
  const scuda::test::Output o = scuda::test::run_program(
      {SCUDA_BIN, "status", "--json", "--server", address}, {"SCUDA_TOKEN_FILE="});
  const nlohmann::json j = nlohmann::json::parse(o.out, nullptr, false);
  uint64_t received = 0, sent = 0;
  if (!j.is_object()) return {~0ull, ~0ull};
  for (const auto& session : j["sessions"]) {
    received += session["bytes_received"].get<uint64_t>();
    sent += session["bytes_sent"].get<uint64_t>();
  }
  return {received, sent};
}

using scuda::test::device_of;
using scuda::test::pattern;

// Every device's primary context retained, with a buffer of 16 MiB on each;
// device 0's context current.
class SeveralServersTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    for (CUdevice dev = 0; dev < kDevices; ++dev) {
      ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx_[dev], dev), CUDA_SUCCESS);
      ASSERT_EQ(cuCtxSetCurrent(ctx_[dev]), CUDA_SUCCESS);
      ASSERT_EQ(cuMemAlloc(&buf_[dev], kBuffer), CUDA_SUCCESS);
    }
    ASSERT_EQ(cuCtxSetCurrent(ctx_[0]), CUDA_SUCCESS);
  }
  void TearDown() override {
    for (CUdevice dev = 0; dev < kDevices; ++dev) {
      cuCtxSetCurrent(ctx_[dev]);
      cuMemFree(buf_[dev]);
    }
    cuCtxSetCurrent(nullptr);
    for (CUdevice dev = 0; dev < kDevices; ++dev) cuDevicePrimaryCtxRelease(dev);
  }

  // The bytes at `p`, read with device `dev`'s context current.
  std::vector<uint8_t> read(CUdeviceptr p, size_t size) {
    std::vector<uint8_t> bytes(size);
    EXPECT_EQ(cuMemcpyDtoH(bytes.data(), p, size), CUDA_SUCCESS);
    return bytes;
  }

  // `size` bytes on device 0 (the first server) and on device 2 (the
  // second); device 0's context is current after.
  void allocate_on_both(size_t size, CUdeviceptr* from, CUdeviceptr* to) {
    ASSERT_EQ(cuMemAlloc(from, size), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(ctx_[2]), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAlloc(to, size), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(ctx_[0]), CUDA_SUCCESS);
  }
  // Random bytes from `seed`, written to `p` (in the current context).
  static std::vector<uint8_t> write_random(CUdeviceptr p, size_t size, unsigned seed) {
    std::vector<uint8_t> bytes(size);
    std::mt19937 random(seed);
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(random());
    EXPECT_EQ(cuMemcpyHtoD(p, bytes.data(), size), CUDA_SUCCESS);
    return bytes;
  }
  // Frees what allocate_on_both allocated.
  void free_on_both(CUdeviceptr from, CUdeviceptr to) {
    ASSERT_EQ(cuCtxSetCurrent(ctx_[2]), CUDA_SUCCESS);
    EXPECT_EQ(cuMemFree(to), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(ctx_[0]), CUDA_SUCCESS);
    EXPECT_EQ(cuMemFree(from), CUDA_SUCCESS);
  }

  CUcontext ctx_[kDevices] = {};
  CUdeviceptr buf_[kDevices] = {};
};

TEST_F(SeveralServersTest, TheDevicesOfBothServersAreOneList) {
  int count = 0;
  ASSERT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
  ASSERT_EQ(count, kDevices);
  const size_t totals[kDevices] = {16 * kGiB, 16 * kGiB, 8 * kGiB};
  for (CUdevice dev = 0; dev < kDevices; ++dev) {
    size_t total = 0;
    ASSERT_EQ(cuDeviceTotalMem(&total, dev), CUDA_SUCCESS);
    EXPECT_EQ(total, totals[dev]) << "device " << dev;
    ASSERT_EQ(cuCtxSetCurrent(ctx_[dev]), CUDA_SUCCESS);
    size_t free = 0;
    ASSERT_EQ(cuMemGetInfo(&free, &total), CUDA_SUCCESS);
    EXPECT_EQ(total, totals[dev]) << "cuMemGetInfo reaches device " << dev << "'s server";
  }
  CUdevice dev = -1;
  EXPECT_EQ(cuDeviceGet(&dev, 2), CUDA_SUCCESS);
  EXPECT_EQ(cuDeviceGet(&dev, 3), CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(SeveralServersTest, DevicesOfTwoServersAreNeverPeers) {
  int can = -1;
  ASSERT_EQ(cuDeviceCanAccessPeer(&can, 0, 2), CUDA_SUCCESS);
  EXPECT_EQ(can, 0);
  ASSERT_EQ(cuDeviceCanAccessPeer(&can, 2, 1), CUDA_SUCCESS);
  EXPECT_EQ(can, 0);
  int value = -1;
  ASSERT_EQ(cuDeviceGetP2PAttribute(&value, CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED, 1, 2),
            CUDA_SUCCESS);
  EXPECT_EQ(value, 0);
  EXPECT_EQ(cuDeviceCanAccessPeer(&can, 0, 1), CUDA_SUCCESS) << "asked of the first server";
  EXPECT_EQ(cuCtxEnablePeerAccess(ctx_[2], 0), CUDA_ERROR_PEER_ACCESS_UNSUPPORTED);
}

TEST_F(SeveralServersTest, EachAllocationBelongsToItsDeviceAndNoneOverlap) {
  for (CUdevice dev = 0; dev < kDevices; ++dev) EXPECT_EQ(device_of(buf_[dev]), dev);
  for (CUdevice a = 0; a < kDevices; ++a)
    for (CUdevice b = 0; b < kDevices; ++b)
      if (a != b) {
        EXPECT_TRUE(buf_[a] + kBuffer <= buf_[b] || buf_[b] + kBuffer <= buf_[a])
            << std::hex << buf_[a] << " " << buf_[b];
      }
}

// A copy reaches the server of its device memory, whichever context is
// current: the driver lets any context copy to any device with unified
// addressing.
TEST_F(SeveralServersTest, CopiesReachTheServerOfTheirMemory) {
  for (CUdevice current : {0, 2}) {
    ASSERT_EQ(cuCtxSetCurrent(ctx_[current]), CUDA_SUCCESS);
    for (CUdevice dev = 0; dev < kDevices; ++dev) {
      const std::vector<uint8_t> bytes = pattern(3 * kMiB + 5, 7 + dev + 3 * current);
      ASSERT_EQ(cuMemcpyHtoD(buf_[dev], bytes.data(), bytes.size()), CUDA_SUCCESS);
      EXPECT_EQ(read(buf_[dev], bytes.size()), bytes)
          << "device " << dev << " with device " << current << "'s context current";
    }
  }
}

TEST_F(SeveralServersTest, CopiesBetweenServersArriveWhole) {
  const std::vector<uint8_t> bytes = pattern(4 * kMiB, 11);
  ASSERT_EQ(cuMemcpyHtoD(buf_[0], bytes.data(), bytes.size()), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyPeer(buf_[2], ctx_[2], buf_[0], ctx_[0], bytes.size()), CUDA_SUCCESS);
  EXPECT_EQ(read(buf_[2], bytes.size()), bytes) << "cuMemcpyPeer, first server to second";

  const std::vector<uint8_t> back = pattern(4 * kMiB, 13);
  ASSERT_EQ(cuMemcpyHtoD(buf_[2], back.data(), back.size()), CUDA_SUCCESS);
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyPeerAsync(buf_[1], ctx_[1], buf_[2], ctx_[2], back.size(), stream),
            CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_EQ(read(buf_[1], back.size()), back) << "cuMemcpyPeerAsync, second server to first";
  ASSERT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);

  const std::vector<uint8_t> third = pattern(kMiB + 3, 17);
  ASSERT_EQ(cuMemcpyHtoD(buf_[1], third.data(), third.size()), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpy(buf_[2], buf_[1], third.size()), CUDA_SUCCESS);
  EXPECT_EQ(read(buf_[2], third.size()), third) << "cuMemcpy with unified addresses";

  // cudart's cudaMemcpyAsync between devices, as PyTorch's copies make it.
  const std::vector<uint8_t> fourth = pattern(2 * kMiB, 23);
  ASSERT_EQ(cuMemcpyHtoD(buf_[2], fourth.data(), fourth.size()), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoDAsync(buf_[0], buf_[2], fourth.size(), nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(read(buf_[0], fourth.size()), fourth) << "cuMemcpyDtoDAsync, second server to first";
  ASSERT_EQ(cuMemcpyDtoD(buf_[1], buf_[0], fourth.size()), CUDA_SUCCESS);
  EXPECT_EQ(read(buf_[1], fourth.size()), fourth) << "cuMemcpyDtoD on the first server";
}

// A stream or event made on one server is used there, even with a context
// of the other server current; a call that ties two servers together is
// refused, not sent to one that does not know half of it.
TEST_F(SeveralServersTest, StreamsAndEventsStayOnTheirServer) {
  ASSERT_EQ(cuCtxSetCurrent(ctx_[2]), CUDA_SUCCESS);
  CUstream stream = nullptr;
  CUevent event = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&event, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx_[0]), CUDA_SUCCESS);
  const std::vector<uint8_t> bytes = pattern(kMiB, 19);
  EXPECT_EQ(cuMemcpyHtoDAsync(buf_[2], bytes.data(), bytes.size(), stream), CUDA_SUCCESS);
  EXPECT_EQ(cuEventRecord(event, stream), CUDA_SUCCESS);
  EXPECT_EQ(cuEventSynchronize(event), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_EQ(read(buf_[2], bytes.size()), bytes);

  CUstream here = nullptr;
  ASSERT_EQ(cuStreamCreate(&here, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamWaitEvent(here, event, 0), CUDA_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(cuStreamDestroy(here), CUDA_SUCCESS);
  EXPECT_EQ(cuEventDestroy(event), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
}

// A library is on every server, so its kernels run on any device; a module
// is its context's. Each launch runs on the server of the current context.
TEST_F(SeveralServersTest, KernelsRunOnTheServerOfTheirContext) {
  CUlibrary library = nullptr;
  ASSERT_EQ(cuLibraryLoadData(&library, kModule, nullptr, nullptr, 0, nullptr, nullptr, 0),
            CUDA_SUCCESS);
  CUkernel kernel = nullptr;
  ASSERT_EQ(cuLibraryGetKernel(&kernel, library, "fill"), CUDA_SUCCESS);
  for (CUdevice dev = 0; dev < kDevices; ++dev) {
    ASSERT_EQ(cuCtxSetCurrent(ctx_[dev]), CUDA_SUCCESS);
    CUfunction fn = nullptr;
    ASSERT_EQ(cuKernelGetFunction(&fn, kernel), CUDA_SUCCESS);
    unsigned value = 0x5ca1ab1e + dev;
    int n = 256;
    void* params[] = {&buf_[dev], &value, &n};
    ASSERT_EQ(cuLaunchKernel(fn, 1, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    std::vector<unsigned> out(n);
    ASSERT_EQ(cuMemcpyDtoH(out.data(), buf_[dev], n * sizeof(unsigned)), CUDA_SUCCESS);
    EXPECT_EQ(out, std::vector<unsigned>(n, value)) << "device " << dev;
  }
  ASSERT_EQ(cuLibraryUnload(library), CUDA_SUCCESS);

  ASSERT_EQ(cuCtxSetCurrent(ctx_[2]), CUDA_SUCCESS);
  CUmodule module = nullptr;
  CUfunction fill = nullptr;
  ASSERT_EQ(cuModuleLoadData(&module, kModule), CUDA_SUCCESS);
  ASSERT_EQ(cuModuleGetFunction(&fill, module, "fill"), CUDA_SUCCESS);
  unsigned value = 77;
  int n = 16;
  void* params[] = {&buf_[2], &value, &n};
  ASSERT_EQ(cuLaunchKernel(fill, 1, 1, 1, 16, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  std::vector<unsigned> out(n);
  ASSERT_EQ(cuMemcpyDtoH(out.data(), buf_[2], n * sizeof(unsigned)), CUDA_SUCCESS);
  EXPECT_EQ(out, std::vector<unsigned>(n, value));
  ASSERT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
}

// Host callbacks of a stream of the second server run, over that server's
// own callback channel.
TEST_F(SeveralServersTest, HostCallbacksRunForEitherServer) {
  static int ran[kDevices] = {};
  for (CUdevice dev : {2, 0}) {
    ASSERT_EQ(cuCtxSetCurrent(ctx_[dev]), CUDA_SUCCESS);
    CUstream stream = nullptr;
    ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
    ASSERT_EQ(cuLaunchHostFunc(
                  stream, [](void* d) { ++*static_cast<int*>(d); }, &ran[dev]),
              CUDA_SUCCESS);
    ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
    EXPECT_EQ(ran[dev], 1) << "device " << dev;
    ASSERT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
  }
}

// The host's copy of managed memory is kept coherent with the first
// server only: managed memory elsewhere is refused, not silently wrong.
TEST_F(SeveralServersTest, ManagedMemoryLivesOnTheFirstServer) {
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAllocManaged(&p, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx_[2]), CUDA_SUCCESS);
  EXPECT_EQ(cuMemAllocManaged(&p, 4096, CU_MEM_ATTACH_GLOBAL), CUDA_ERROR_NOT_SUPPORTED);
}

// Mapped host memory on the second server, which keeps no managed memory,
// is an eager live mirror: what the host wrote reaches the device ahead of
// the launch (the double's echo kernel, given no time to wait, finds it),
// and the device's answer comes back.
TEST_F(SeveralServersTest, MappedHostMemoryWorksOnTheSecondServer) {
  ASSERT_EQ(cuCtxSetCurrent(ctx_[2]), CUDA_SUCCESS);
  void* p = nullptr;
  ASSERT_EQ(cuMemHostAlloc(&p, 4096, CU_MEMHOSTALLOC_DEVICEMAP), CUDA_SUCCESS);
  CUdeviceptr device = 0;
  ASSERT_EQ(cuMemHostGetDevicePointer(&device, p, 0), CUDA_SUCCESS);
  EXPECT_EQ(device, reinterpret_cast<CUdeviceptr>(p));
  CUmodule module = nullptr;
  CUfunction echo = nullptr;
  ASSERT_EQ(cuModuleLoadData(&module, "scuda-double-module\nkernel echo 8 4\n"), CUDA_SUCCESS);
  ASSERT_EQ(cuModuleGetFunction(&echo, module, "echo"), CUDA_SUCCESS);
  auto* words = static_cast<unsigned*>(p);
  for (unsigned round = 1; round <= 3; ++round) {
    // The live thread naps between quiet turns by now: only the flush ahead
    // of the launch brings the word in time.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    words[0] = round * 100;
    int no_wait = 0;
    void* params[] = {&device, &no_wait};
    ASSERT_EQ(cuLaunchKernel(echo, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS) << "round " << round;
    EXPECT_EQ(words[1], round * 100 + 1) << "round " << round;
  }
  EXPECT_EQ(cuModuleUnload(module), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFreeHost(p), CUDA_SUCCESS);
}

// A copy between servers goes from the first server's session to the
// second's directly: neither session's connection to the client carries
// its bytes. With SCUDA_PEER_COPIES=0 it goes through the client (switched
// through the library's hook: setenv would race the library's threads,
// which read the environment).
TEST_F(SeveralServersTest, CopiesBetweenServersGoServerToServer) {
  // Random, so that no copy on the client's connections shrinks with lz4;
  // large enough to go directly (smaller copies are staged).
  std::vector<uint8_t> bytes(kBuffer);
  std::mt19937 random(29);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(random());
  ASSERT_EQ(cuMemcpyHtoD(buf_[0], bytes.data(), bytes.size()), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  for (const bool direct : {true, false}) {
    scuda_set_peer_copies(direct ? 1 : 0);
    const auto [first_in, first_out] = client_bytes(first->address());
    const auto [second_in, second_out] = client_bytes(second->address());
    ASSERT_EQ(cuMemcpyPeer(buf_[2], ctx_[2], buf_[0], ctx_[0], bytes.size()), CUDA_SUCCESS);
    // A staged copy's last piece goes one-way: the counts wait for it.
    ASSERT_EQ(cuCtxSetCurrent(ctx_[2]), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    const uint64_t sent_by_first = client_bytes(first->address()).second - first_out;
    const uint64_t received_by_second = client_bytes(second->address()).first - second_in;
    scuda_set_peer_copies(1);
    if (direct) {
      EXPECT_LT(sent_by_first, kMiB) << "the first server sent the copy to the client";
      EXPECT_LT(received_by_second, kMiB) << "the second server got the copy from the client";
    } else {
      EXPECT_GE(sent_by_first, bytes.size());
      EXPECT_GE(received_by_second, bytes.size());
    }
    ASSERT_EQ(cuCtxSetCurrent(ctx_[2]), CUDA_SUCCESS);
    EXPECT_EQ(read(buf_[2], bytes.size()), bytes) << (direct ? "direct" : "staged");
    ASSERT_EQ(cuMemsetD8(buf_[2], 0, bytes.size()), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(ctx_[0]), CUDA_SUCCESS);
  }
}

// How many connections have joined sessions of the server so far, by its log.
size_t joins(const scuda::test::ServerProcess& server) {
  const std::string log = server.log();
  size_t n = 0;
  for (size_t at = log.find("handed a joining connection"); at != std::string::npos;
       at = log.find("handed a joining connection", at + 1))
    ++n;
  return n;
}

// A direct copy crosses in stripes, each on a connection of its own
// (server/copies/peer_copies.h), and arrives whole when its size is no multiple of
// anything: the last stripe is the short one.
TEST_F(SeveralServersTest, CopiesBetweenServersCrossInStripes) {
  const size_t size = kBuffer + 12345;
  CUdeviceptr from = 0, to = 0;
  ASSERT_NO_FATAL_FAILURE(allocate_on_both(size, &from, &to));
  const std::vector<uint8_t> bytes = write_random(from, size, 31);
  const size_t joined_before = joins(*second);
  const uint64_t received_before = client_bytes(second->address()).first;
  ASSERT_EQ(cuMemcpyPeer(to, ctx_[2], from, ctx_[0], size), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx_[2]), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_LT(client_bytes(second->address()).first - received_before, kMiB)
      << "the second server got the copy from the client";
  // The log's lines of the joins may come a moment after the copy.
  for (int i = 0; i < 100 && joins(*second) - joined_before < 4; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_GE(joins(*second) - joined_before, 4u) << "a copy of 16 MiB and more takes 4 streams";
  ASSERT_EQ(cuCtxSetCurrent(ctx_[2]), CUDA_SUCCESS);
  EXPECT_EQ(read(to, size), bytes);
  free_on_both(from, to);
}

// The stripes' connections stay open after a copy, and the next copy
// between the same two sessions crosses on them: no new join reaches the
// destination's listener, and the bytes arrive whole.
TEST_F(SeveralServersTest, ASecondCopyBetweenServersCrossesOnTheFirstOnesConnections) {
  const size_t size = kBuffer + 4321;
  CUdeviceptr from = 0, to = 0;
  ASSERT_NO_FATAL_FAILURE(allocate_on_both(size, &from, &to));
  for (unsigned copy = 0; copy < 2; ++copy) {
    const std::vector<uint8_t> bytes = write_random(from, size, 37 + copy);
    const size_t joined_before = joins(*second);
    ASSERT_EQ(cuMemcpyPeer(to, ctx_[2], from, ctx_[0], size), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(ctx_[2]), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
    EXPECT_EQ(read(to, size), bytes) << "copy " << copy;
    ASSERT_EQ(cuCtxSetCurrent(ctx_[0]), CUDA_SUCCESS);
    // The log's lines of the joins may come a moment after the copy.
    const size_t wanted = copy == 0 ? 4 : 1;
    for (int i = 0; i < 20 && joins(*second) - joined_before < wanted; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (copy == 0) {
      EXPECT_GE(joins(*second) - joined_before, 4u) << "the first copy dials its 4 stripes";
    } else {
      EXPECT_EQ(joins(*second) - joined_before, 0u) << "the second copy dialled again";
    }
  }
  free_on_both(from, to);
}

// A pool for the second server's device lives there, under that server's
// number (0; the double refuses 2, which it does not have), in each call
// that names a device: its creation, its access, an allocation from it.
TEST_F(SeveralServersTest, MemoryPoolsNameTheirServersDevices) {
  CUmemPoolProps props{};
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.location = {CU_MEM_LOCATION_TYPE_DEVICE, 2};
  CUmemoryPool pool = nullptr;
  ASSERT_EQ(cuMemPoolCreate(&pool, &props), CUDA_SUCCESS);
  const CUmemAccessDesc access{{CU_MEM_LOCATION_TYPE_DEVICE, 2}, CU_MEM_ACCESS_FLAGS_PROT_READ};
  EXPECT_EQ(cuMemPoolSetAccess(pool, &access, 1), CUDA_SUCCESS);
  CUmemLocation where{CU_MEM_LOCATION_TYPE_DEVICE, 2};
  CUmemAccess_flags flags = CU_MEM_ACCESS_FLAGS_PROT_NONE;
  EXPECT_EQ(cuMemPoolGetAccess(&flags, pool, &where), CUDA_SUCCESS);
  EXPECT_EQ(flags, CU_MEM_ACCESS_FLAGS_PROT_READ);
  EXPECT_EQ(where.id, 2);  // the program's number, left as it gave it
  // A device of the first server cannot reach the second's pool.
  const CUmemAccessDesc other{{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  EXPECT_EQ(cuMemPoolSetAccess(pool, &other, 1), CUDA_ERROR_NOT_SUPPORTED);
  ASSERT_EQ(cuCtxSetCurrent(ctx_[2]), CUDA_SUCCESS);
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAllocFromPoolAsync(&p, kMiB, pool, stream), CUDA_SUCCESS);
  EXPECT_EQ(device_of(p), 2);
  EXPECT_EQ(cuMemFreeAsync(p, stream), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
  EXPECT_EQ(cuMemPoolDestroy(pool), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx_[0]), CUDA_SUCCESS);
}

// The program's own virtual memory management on the second server's device:
// each device location is translated to that server's number.
TEST_F(SeveralServersTest, VirtualMemoryOnTheSecondServerNamesItsDevice) {
  ASSERT_EQ(cuCtxSetCurrent(ctx_[2]), CUDA_SUCCESS);
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, 2};
  size_t granularity = 0;
  ASSERT_EQ(cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
            CUDA_SUCCESS);
  ASSERT_GT(granularity, 0u);
  scuda::test::OwnMapping mapping(2, granularity, granularity);
  ASSERT_TRUE(mapping.ok());
  const CUmemAccessDesc access{prop.location, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  ASSERT_EQ(cuMemSetAccess(mapping.address(), granularity, &access, 1), CUDA_SUCCESS);
  const std::vector<uint8_t> bytes = pattern(4096, 31);
  ASSERT_EQ(cuMemcpyHtoD(mapping.address(), bytes.data(), bytes.size()), CUDA_SUCCESS);
  EXPECT_EQ(read(mapping.address(), bytes.size()), bytes);
}

}  // namespace
