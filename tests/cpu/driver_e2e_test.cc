// End to end: this test program is a client, linked against the stand-in
// libcuda; the server it talks to is a real `scuda server` process loading
// the driver test double. Nothing here runs on a GPU.
#include <cuda.h>
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <numeric>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "primary_context_test.h"
#include "shared_server.h"

extern "C" uint64_t scuda_replies_awaited();

namespace {

const char kModule[] =
    "scuda-double-module\n"
    "kernel vadd 8 8 8 4\n"
    "kernel fill 8 4 4\n"
    "kernel say 4\n"
    "global counter 4\n";

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class DriverTest : public scuda::test::PrimaryContextTest {};

TEST_F(DriverTest, DeviceQueriesComeFromTheServersDriver) {
  int count = 0, sms = 0, version = 0;
  char name[64] = {};
  EXPECT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
  EXPECT_EQ(count, 1);
  EXPECT_EQ(cuDeviceGetName(name, sizeof name, dev_), CUDA_SUCCESS);
  EXPECT_STREQ(name, "scuda test double");
  EXPECT_EQ(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev_),
            CUDA_SUCCESS);
  EXPECT_EQ(sms, 4);
  EXPECT_EQ(cuDriverGetVersion(&version), CUDA_SUCCESS);
  EXPECT_EQ(version, 13000);
  CUdevice other;
  EXPECT_EQ(cuDeviceGet(&other, 1), CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(DriverTest, LimitsAreAskedOnceUntilSetOrReset) {
  size_t value = 0;
  uint64_t before = scuda_replies_awaited();
  ASSERT_EQ(cuCtxGetLimit(&value, CU_LIMIT_STACK_SIZE), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxGetLimit(&value, CU_LIMIT_STACK_SIZE), CUDA_SUCCESS);
  EXPECT_EQ(value, 1024u);
  EXPECT_EQ(scuda_replies_awaited(), before + 1);
  ASSERT_EQ(cuCtxSetLimit(CU_LIMIT_STACK_SIZE, 2001), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxGetLimit(&value, CU_LIMIT_STACK_SIZE), CUDA_SUCCESS);
  EXPECT_EQ(value, 2016u);  // the driver's rounding, asked again
  before = scuda_replies_awaited();
  ASSERT_EQ(cuCtxGetLimit(&value, CU_LIMIT_STACK_SIZE), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before);
  ASSERT_EQ(cuDevicePrimaryCtxReset(dev_), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx_, dev_), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
  // Back at the device's default, which the first answer told.
  before = scuda_replies_awaited();
  ASSERT_EQ(cuCtxGetLimit(&value, CU_LIMIT_STACK_SIZE), CUDA_SUCCESS);
  EXPECT_EQ(value, 1024u);
  EXPECT_EQ(scuda_replies_awaited(), before);
}

TEST_F(DriverTest, ApiVersionIsAskedOncePerDevice) {
  unsigned first = 0, again = 0;
  ASSERT_EQ(cuCtxGetApiVersion(nullptr, &first), CUDA_SUCCESS);
  const uint64_t before = scuda_replies_awaited();
  ASSERT_EQ(cuCtxGetApiVersion(ctx_, &again), CUDA_SUCCESS);
  EXPECT_EQ(again, first);
  EXPECT_EQ(scuda_replies_awaited(), before);
  EXPECT_EQ(cuCtxGetApiVersion(ctx_, nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(DriverTest, LoadingModeIsAskedOnce) {
  CUmoduleLoadingMode first, again;
  ASSERT_EQ(cuModuleGetLoadingMode(&first), CUDA_SUCCESS);
  const uint64_t before = scuda_replies_awaited();
  ASSERT_EQ(cuModuleGetLoadingMode(&again), CUDA_SUCCESS);
  EXPECT_EQ(again, first);
  EXPECT_EQ(scuda_replies_awaited(), before);
  EXPECT_EQ(cuModuleGetLoadingMode(nullptr), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(DriverTest, PrimaryContextStateIsTheDriversAndFollowsSetFlags) {
  unsigned flags = 99;
  int active = 0;
  ASSERT_EQ(cuDevicePrimaryCtxGetState(dev_, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(active, 1);
  ASSERT_EQ(cuDevicePrimaryCtxSetFlags(dev_, CU_CTX_SCHED_BLOCKING_SYNC), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxGetState(dev_, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(flags, unsigned{CU_CTX_SCHED_BLOCKING_SYNC});
  ASSERT_EQ(cuDevicePrimaryCtxSetFlags(dev_, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuDevicePrimaryCtxGetState(dev_, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(flags, 0u);
}

// The server holds one reference while the program holds any.
TEST_F(DriverTest, OnlyTheFirstRetainAndTheLastReleaseReachTheServer) {
  CUcontext again = nullptr;
  const uint64_t before = scuda_replies_awaited();
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&again, dev_), CUDA_SUCCESS);
  EXPECT_EQ(again, ctx_);
  ASSERT_EQ(cuDevicePrimaryCtxRelease(dev_), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before);
  CUdeviceptr d;
  ASSERT_EQ(cuMemAlloc(&d, 64), CUDA_SUCCESS);  // the fixture's retain still holds it
  EXPECT_EQ(cuMemFree(d), CUDA_SUCCESS);
  unsigned flags = 0;
  int active = 0;
  ASSERT_EQ(cuDevicePrimaryCtxRelease(dev_), CUDA_SUCCESS);  // the fixture's, the last
  ASSERT_EQ(cuDevicePrimaryCtxGetState(dev_, &flags, &active), CUDA_SUCCESS);
  EXPECT_EQ(active, 0);
  ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx_, dev_), CUDA_SUCCESS);  // for TearDown
  ASSERT_EQ(cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
}

TEST_F(DriverTest, CopiesRoundTripAcrossChunkBoundaries) {
  for (size_t size : {size_t{1}, size_t{3}, size_t{1 << 20} + 3, size_t{20} << 20}) {
    std::vector<uint8_t> in(size), out(size, 0);
    for (size_t i = 0; i < size; ++i) in[i] = static_cast<uint8_t>(i * 31 + 7);
    CUdeviceptr d;
    ASSERT_EQ(cuMemAlloc(&d, size), CUDA_SUCCESS) << size;
    ASSERT_EQ(cuMemcpyHtoD(d, in.data(), size), CUDA_SUCCESS) << size;
    ASSERT_EQ(cuMemcpyDtoH(out.data(), d, size), CUDA_SUCCESS) << size;
    EXPECT_EQ(in, out) << size;
    EXPECT_EQ(cuMemFree(d), CUDA_SUCCESS);
  }
}

// The server reads host-to-device data straight into its staging buffer in
// 2 MiB pieces of 8 MiB chunks (async copies of at most 64 KiB go through
// the driver's own staging): every size around those boundaries, at
// unaligned addresses, synchronous or not, arrives intact and alone.
TEST_F(DriverTest, HostToDeviceCopiesArriveIntactAroundPieceAndChunkBoundaries) {
  const size_t piece = size_t{2} << 20, chunk = size_t{8} << 20, small = size_t{64} << 10;
  const size_t sizes[] = {1,         small,     small + 1, piece - 1, piece,
                          piece + 1, chunk - 1, chunk,     chunk + 1, 2 * chunk + piece + 3};
  const size_t room = 2 * chunk + piece + 16;
  std::vector<uint8_t> in(room), out(room);
  for (size_t i = 0; i < room; ++i) in[i] = static_cast<uint8_t>(i * 131 + i / 4099);
  CUdeviceptr d;
  ASSERT_EQ(cuMemAlloc(&d, room), CUDA_SUCCESS);
  CUstream s;
  ASSERT_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  for (bool async : {false, true}) {
    for (size_t size : sizes) {
      ASSERT_EQ(cuMemsetD8(d, 0, room), CUDA_SUCCESS);
      if (async) {
        ASSERT_EQ(cuMemcpyHtoDAsync(d + 3, in.data() + 5, size, s), CUDA_SUCCESS) << size;
        ASSERT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS) << size;
      } else {
        ASSERT_EQ(cuMemcpyHtoD(d + 3, in.data() + 5, size), CUDA_SUCCESS) << size;
      }
      ASSERT_EQ(cuMemcpyDtoH(out.data(), d, size + 4), CUDA_SUCCESS) << size;
      EXPECT_EQ(out[2], 0) << size;
      EXPECT_TRUE(std::equal(out.begin() + 3, out.begin() + 3 + size, in.begin() + 5))
          << size << (async ? " async" : "");
      EXPECT_EQ(out[size + 3], 0) << size;
    }
  }
  EXPECT_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFree(d), CUDA_SUCCESS);
}

// A copy to an address the client does not know waits for the driver's
// answer, whatever its size; the session goes on.
TEST_F(DriverTest, HostToDeviceCopyToABadAddressReportsTheError) {
  std::vector<uint8_t> data((size_t{3} << 20) + 1, 0x5a);
  for (size_t size : {size_t{4}, data.size()})
    EXPECT_EQ(cuMemcpyHtoD(0x10, data.data(), size), CUDA_ERROR_INVALID_VALUE) << size;
  CUdeviceptr d;
  ASSERT_EQ(cuMemAlloc(&d, 4096), CUDA_SUCCESS);
  EXPECT_EQ(cuMemcpyHtoD(d + 4000, data.data(), 200), CUDA_ERROR_INVALID_VALUE);
  uint32_t word = 0;
  ASSERT_EQ(cuMemcpyHtoD(d, data.data(), 4), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(&word, d, 4), CUDA_SUCCESS);
  EXPECT_EQ(word, 0x5a5a5a5au);
  EXPECT_EQ(cuMemFree(d), CUDA_SUCCESS);
}

// The server sends a chunk in pieces as their copies complete; a range that
// runs past its allocation in a later piece must still fail the whole copy.
TEST_F(DriverTest, CopyRunningPastTheAllocationFailsBeforeAnyData) {
  const size_t size = size_t{5} << 20;
  CUdeviceptr d;
  ASSERT_EQ(cuMemAlloc(&d, size), CUDA_SUCCESS);
  std::vector<uint8_t> out(size + 4096, 0xee);
  EXPECT_EQ(cuMemcpyDtoH(out.data(), d, size + 4096), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(out[0], 0xee);
  ASSERT_EQ(cuMemsetD8(d, 0x11, size), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoH(out.data(), d, size), CUDA_SUCCESS);
  EXPECT_EQ(out[size - 1], 0x11);
  EXPECT_EQ(cuMemFree(d), CUDA_SUCCESS);
}

TEST_F(DriverTest, DeviceToDeviceAndUnifiedCopies) {
  const size_t size = 4096;
  std::vector<uint8_t> in(size, 0x5a), out(size, 0);
  CUdeviceptr a, b;
  ASSERT_EQ(cuMemAlloc(&a, size), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&b, size), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpy(a, reinterpret_cast<CUdeviceptr>(in.data()), size), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoD(b, a, size), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpy(reinterpret_cast<CUdeviceptr>(out.data()), b, size), CUDA_SUCCESS);
  EXPECT_EQ(in, out);
  cuMemFree(a);
  cuMemFree(b);
}

TEST_F(DriverTest, PinnedHostMemoryIsPageAlignedAndCopiesBothWays) {
  void* pinned = nullptr;
  unsigned flags = 0;
  ASSERT_EQ(cuMemHostAlloc(&pinned, 10000, CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(pinned) % 4096, 0u);
  EXPECT_EQ(cuMemHostGetFlags(&flags, static_cast<char*>(pinned) + 9999), CUDA_SUCCESS);
  EXPECT_EQ(flags, unsigned{CU_MEMHOSTALLOC_PORTABLE});
  std::memset(pinned, 0x3c, 10000);
  CUdeviceptr d;
  ASSERT_EQ(cuMemAlloc(&d, 10000), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoDAsync(d, pinned, 10000, nullptr), CUDA_SUCCESS);
  std::vector<uint8_t> back(10000);
  ASSERT_EQ(cuMemcpyDtoH(back.data(), d, 10000), CUDA_SUCCESS);
  EXPECT_EQ(back, std::vector<uint8_t>(10000, 0x3c));
  EXPECT_EQ(cuMemFreeHost(pinned), CUDA_SUCCESS);
  EXPECT_EQ(cuMemFreeHost(pinned), CUDA_ERROR_INVALID_VALUE);
  cuMemFree(d);
}

// An allocation's attributes are asked once while it lives; pointers into
// it are answered from the kept answer.
TEST_F(DriverTest, PointerAttributesOfAnAllocationAreAskedOnce) {
  CUdeviceptr d = 0;
  ASSERT_EQ(cuMemAlloc(&d, 1 << 20), CUDA_SUCCESS);
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
                                 CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
  unsigned type = 0;
  CUdeviceptr device = 0;
  int ordinal = -1;
  void* data[] = {&type, &device, &ordinal};
  const uint64_t before = scuda_replies_awaited();
  ASSERT_EQ(cuPointerGetAttributes(3, attrs, data, d + 16), CUDA_SUCCESS);
  EXPECT_EQ(type, unsigned{CU_MEMORYTYPE_DEVICE});
  EXPECT_EQ(device, d + 16);
  EXPECT_EQ(ordinal, 0);
  for (CUdeviceptr at : {d + 4096, d, d + (1 << 20) - 1}) {
    type = 0, device = 0, ordinal = -1;
    ASSERT_EQ(cuPointerGetAttributes(3, attrs, data, at), CUDA_SUCCESS);
    EXPECT_EQ(type, unsigned{CU_MEMORYTYPE_DEVICE});
    EXPECT_EQ(device, at);
    EXPECT_EQ(ordinal, 0);
  }
  ASSERT_EQ(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 8), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before + 1);
  ASSERT_EQ(cuMemFree(d), CUDA_SUCCESS);
  cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, d + 8);
  EXPECT_EQ(scuda_replies_awaited(), before + 2)
      << "a freed allocation was described from what was kept";
}

TEST_F(DriverTest, PageLockedBlocksDescribeThemselvesAsHostMemory) {
  void* pinned = nullptr;
  ASSERT_EQ(cuMemAllocHost(&pinned, 4096), CUDA_SUCCESS);
  CUpointer_attribute attrs[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                 CU_POINTER_ATTRIBUTE_HOST_POINTER,
                                 CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
  unsigned type = 0;
  void* host = nullptr;
  CUdeviceptr device = 1;
  void* data[] = {&type, &host, &device};
  const auto ptr = reinterpret_cast<CUdeviceptr>(pinned) + 100;
  ASSERT_EQ(cuPointerGetAttributes(3, attrs, data, ptr), CUDA_SUCCESS);
  EXPECT_EQ(type, unsigned{CU_MEMORYTYPE_HOST});
  EXPECT_EQ(host, reinterpret_cast<void*>(ptr));
  EXPECT_EQ(device, 0u);
  cuMemFreeHost(pinned);
}

TEST_F(DriverTest, AsyncDeviceToHostDataAndErrorsArriveAtTheSynchronization) {
  CUdeviceptr d;
  ASSERT_EQ(cuMemAlloc(&d, 256), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8(d, 0x5a, 256), CUDA_SUCCESS);
  std::vector<uint8_t> out(256, 0);
  ASSERT_EQ(cuMemcpyDtoHAsync(out.data(), d, 256, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  EXPECT_EQ(out, std::vector<uint8_t>(256, 0x5a));
  // A bad source is an error of the copy, reported where CUDA reports async
  // errors: at the synchronization.
  EXPECT_EQ(cuMemcpyDtoHAsync(out.data(), 0x10, 4, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(nullptr), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuStreamSynchronize(nullptr), CUDA_SUCCESS);
  cuMemFree(d);
}

TEST_F(DriverTest, MemsetWritesThePattern) {
  CUdeviceptr d;
  ASSERT_EQ(cuMemAlloc(&d, 64), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD32(d, 0xdeadbeef, 16), CUDA_SUCCESS);
  ASSERT_EQ(cuMemsetD8(d, 0x11, 4), CUDA_SUCCESS);
  uint32_t out[16];
  ASSERT_EQ(cuMemcpyDtoH(out, d, sizeof out), CUDA_SUCCESS);
  EXPECT_EQ(out[0], 0x11111111u);
  for (int i = 1; i < 16; ++i) EXPECT_EQ(out[i], 0xdeadbeefu);
  cuMemFree(d);
}

TEST_F(DriverTest, AsyncCopiesOnAStreamWithEvents) {
  CUstream s;
  CUevent start, stop;
  ASSERT_EQ(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&start, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&stop, CU_EVENT_DEFAULT), CUDA_SUCCESS);
  std::vector<float> in(1000), out(1000);
  std::iota(in.begin(), in.end(), 1.0f);
  CUdeviceptr d;
  ASSERT_EQ(cuMemAlloc(&d, in.size() * sizeof(float)), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(start, s), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoDAsync(d, in.data(), in.size() * sizeof(float), s), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyDtoHAsync(out.data(), d, out.size() * sizeof(float), s), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(stop, s), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(in, out);
  float ms = -1;
  EXPECT_EQ(cuEventElapsedTime(&ms, start, stop), CUDA_SUCCESS);
  EXPECT_GE(ms, 0.0f);
  EXPECT_EQ(cuEventDestroy(start), CUDA_SUCCESS);
  EXPECT_EQ(cuEventDestroy(stop), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
  cuMemFree(d);
}

class LaunchTest : public DriverTest {
 protected:
  void SetUp() override {
    DriverTest::SetUp();
    ASSERT_EQ(cuModuleLoadData(&mod_, kModule), CUDA_SUCCESS);
    ASSERT_EQ(cuModuleGetFunction(&vadd_, mod_, "vadd"), CUDA_SUCCESS);
    for (CUdeviceptr* p : {&a_, &b_, &c_})
      ASSERT_EQ(cuMemAlloc(p, kN * sizeof(float)), CUDA_SUCCESS);
    std::vector<float> a(kN), b(kN);
    for (int i = 0; i < kN; ++i) a[i] = i, b[i] = 2.0f * i;
    ASSERT_EQ(cuMemcpyHtoD(a_, a.data(), kN * sizeof(float)), CUDA_SUCCESS);
    ASSERT_EQ(cuMemcpyHtoD(b_, b.data(), kN * sizeof(float)), CUDA_SUCCESS);
  }
  void TearDown() override {
    for (CUdeviceptr p : {a_, b_, c_}) cuMemFree(p);
    cuModuleUnload(mod_);
    DriverTest::TearDown();
  }
  void expect_sums() {
    std::vector<float> c(kN);
    ASSERT_EQ(cuMemcpyDtoH(c.data(), c_, kN * sizeof(float)), CUDA_SUCCESS);
    for (int i = 0; i < kN; ++i) ASSERT_EQ(c[i], 3.0f * i) << i;
  }

  static constexpr int kN = 1000;
  CUmodule mod_ = nullptr;
  CUfunction vadd_ = nullptr;
  // vadd of a fresh library, looked up while no context is current (as
  // cudart does), with the test's context current again afterwards.
  void look_up_without_context(CUlibrary* lib, CUkernel* kernel) {
    ASSERT_EQ(cuCtxSetCurrent(nullptr), CUDA_SUCCESS);
    ASSERT_EQ(cuLibraryLoadData(lib, kModule, nullptr, nullptr, 0, nullptr, nullptr, 0),
              CUDA_SUCCESS);
    ASSERT_EQ(cuLibraryGetKernel(kernel, *lib, "vadd"), CUDA_SUCCESS);
    ASSERT_EQ(cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
  }

  CUdeviceptr a_ = 0, b_ = 0, c_ = 0;
};

TEST_F(LaunchTest, LaunchesWaitForNoReplyAndASynchronizeForOne) {
  int n = kN;
  void* params[] = {&a_, &b_, &c_, &n};
  const uint64_t before = scuda_replies_awaited();
  for (int i = 0; i < 3; ++i)
    ASSERT_EQ(cuLaunchKernel(vadd_, 4, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before + 1);
}

TEST_F(LaunchTest, RepeatingASetKeepsCachedAttributes) {
  const auto attr = CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
  int value = 0;
  auto get_costs = [&] {  // replies one query waited for
    const uint64_t before = scuda_replies_awaited();
    EXPECT_EQ(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, vadd_), CUDA_SUCCESS);
    return scuda_replies_awaited() - before;
  };
  ASSERT_EQ(cuFuncSetAttribute(vadd_, attr, 1024), CUDA_SUCCESS);
  get_costs();
  EXPECT_EQ(get_costs(), 0u);
  ASSERT_EQ(cuFuncSetAttribute(vadd_, attr, 1024), CUDA_SUCCESS);
  EXPECT_EQ(get_costs(), 0u);
  ASSERT_EQ(cuFuncSetAttribute(vadd_, attr, 2048), CUDA_SUCCESS);
  EXPECT_EQ(get_costs(), 1u);
}

TEST_F(LaunchTest, ASetForgetsOnlyThatFunctionsAttributes) {
  CUfunction fill = nullptr;
  ASSERT_EQ(cuModuleGetFunction(&fill, mod_, "fill"), CUDA_SUCCESS);
  int value = 0;
  ASSERT_EQ(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, fill), CUDA_SUCCESS);
  ASSERT_EQ(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, vadd_), CUDA_SUCCESS);
  ASSERT_EQ(cuFuncSetAttribute(vadd_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 4096),
            CUDA_SUCCESS);
  const uint64_t before = scuda_replies_awaited();
  ASSERT_EQ(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, fill), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before);
  ASSERT_EQ(cuFuncGetAttribute(&value, CU_FUNC_ATTRIBUTE_NUM_REGS, vadd_), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before + 1);
}

// The block size found gives the most resident threads of any candidate a
// warp apart, with the program's callback choosing the shared memory.
TEST_F(LaunchTest, PotentialBlockSizeSearchesWithTheProgramsCallback) {
  static int calls;
  calls = 0;
  auto smem_of = [](int block_size) {
    ++calls;
    return size_t(block_size) * 200;
  };
  int grid = 0, block = 0;
  ASSERT_EQ(cuOccupancyMaxPotentialBlockSize(&grid, &block, vadd_, smem_of, 0, 0), CUDA_SUCCESS);
  EXPECT_GT(calls, 0);
  auto threads = [&](int size) {
    int blocks = 0;
    EXPECT_EQ(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, vadd_, size, size * 200),
              CUDA_SUCCESS);
    return size * blocks;
  };
  for (int size = 32; size <= 1024; size += 32) EXPECT_LE(threads(size), threads(block)) << size;
  int blocks = 0, sms = 0;
  ASSERT_EQ(cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, vadd_, block, block * 200),
            CUDA_SUCCESS);
  ASSERT_EQ(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0), CUDA_SUCCESS);
  EXPECT_EQ(grid, blocks * sms);
  ASSERT_EQ(cuOccupancyMaxPotentialBlockSize(&grid, &block, vadd_, nullptr, 0, 100), CUDA_SUCCESS);
  EXPECT_LE(block, 100);
  EXPECT_GT(block, 0);
}

TEST_F(LaunchTest, FunctionsAndKernelsKnowTheirNames) {
  const char* name = nullptr;
  ASSERT_EQ(cuFuncGetName(&name, vadd_), CUDA_SUCCESS);
  EXPECT_STREQ(name, "vadd");
  CUlibrary lib;
  ASSERT_EQ(cuLibraryLoadData(&lib, kModule, nullptr, nullptr, 0, nullptr, nullptr, 0),
            CUDA_SUCCESS);
  CUkernel kernel;
  CUfunction fn;
  ASSERT_EQ(cuLibraryGetKernel(&kernel, lib, "vadd"), CUDA_SUCCESS);
  ASSERT_EQ(cuKernelGetFunction(&fn, kernel), CUDA_SUCCESS);
  ASSERT_EQ(cuKernelGetName(&name, kernel), CUDA_SUCCESS);
  EXPECT_STREQ(name, "vadd");
  ASSERT_EQ(cuFuncGetName(&name, fn), CUDA_SUCCESS);
  EXPECT_STREQ(name, "vadd");
  ASSERT_EQ(cuLibraryUnload(lib), CUDA_SUCCESS);
  EXPECT_EQ(cuKernelGetName(&name, kernel), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuFuncGetName(&name, reinterpret_cast<CUfunction>(0x12340)), CUDA_ERROR_INVALID_HANDLE);
}

TEST_F(LaunchTest, OccupancyIsAskedOncePerQuestionUntilAnAttributeChanges) {
  int blocks = 0;
  auto ask = [&](int block_size, size_t smem) {  // replies one query waited for
    const uint64_t before = scuda_replies_awaited();
    EXPECT_EQ(cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, vadd_, block_size, smem,
                                                                   CU_OCCUPANCY_DEFAULT),
              CUDA_SUCCESS);
    return scuda_replies_awaited() - before;
  };
  EXPECT_EQ(ask(256, 0), 1u);
  EXPECT_EQ(blocks, 8);
  EXPECT_EQ(ask(256, 0), 0u);
  EXPECT_EQ(blocks, 8);
  EXPECT_EQ(ask(128, 0), 1u);
  EXPECT_EQ(blocks, 16);
  EXPECT_EQ(ask(256, 65536), 1u);
  EXPECT_EQ(blocks, 3);
  ASSERT_EQ(cuFuncSetAttribute(vadd_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 8192),
            CUDA_SUCCESS);
  EXPECT_EQ(ask(256, 0), 1u);
  ASSERT_EQ(cuFuncSetCacheConfig(vadd_, CU_FUNC_CACHE_PREFER_SHARED), CUDA_SUCCESS);
  EXPECT_EQ(ask(256, 0), 1u);
  EXPECT_EQ(ask(256, 0), 0u);
}

// cuBLASLt asks for each problem size: the grid and the stream (beyond its
// context) cannot change the answer, so they do not cost a round trip.
TEST_F(LaunchTest, ClusterOccupancyIsAskedOncePerBlockShapeWhateverTheGrid) {
  auto ask = [&](uint8_t which, unsigned grid, unsigned block, unsigned cluster, CUstream stream,
                 int* value) {  // replies one query waited for
    CUlaunchAttribute attrs[2] = {};
    attrs[0].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[0].value.clusterDim = {cluster, 1, 1};
    attrs[1].id = CU_LAUNCH_ATTRIBUTE_PRIORITY;
    attrs[1].value.priority = static_cast<int>(grid);
    const CUlaunchConfig c{grid, 1, 1, block, 1, 1, 0, stream, attrs, 2};
    const uint64_t before = scuda_replies_awaited();
    EXPECT_EQ(which == 0 ? cuOccupancyMaxActiveClusters(value, vadd_, &c)
                         : cuOccupancyMaxPotentialClusterSize(value, vadd_, &c),
              CUDA_SUCCESS);
    return scuda_replies_awaited() - before;
  };
  int clusters = 0;
  EXPECT_EQ(ask(0, 8, 256, 2, nullptr, &clusters), 1u);
  EXPECT_EQ(clusters, 16);  // 4 SMs x 8 blocks of 256 threads, in pairs
  for (unsigned grid : {16u, 64u, 4096u}) {
    EXPECT_EQ(ask(0, grid, 256, 2, nullptr, &clusters), 0u) << grid;
    EXPECT_EQ(clusters, 16);
  }
  EXPECT_EQ(ask(0, 8, 256, 2, CU_STREAM_LEGACY, &clusters), 0u);  // the current context's too
  EXPECT_EQ(ask(0, 8, 256, 4, nullptr, &clusters), 1u);
  EXPECT_EQ(clusters, 8);
  EXPECT_EQ(ask(0, 8, 512, 2, nullptr, &clusters), 1u);
  EXPECT_EQ(clusters, 8);
  int size = 0;
  EXPECT_EQ(ask(1, 8, 1024, 2, nullptr, &size), 1u);
  EXPECT_EQ(size, 8);
  // cuOccupancyMaxPotentialClusterSize ignores the cluster dimensions.
  EXPECT_EQ(ask(1, 32, 1024, 4, nullptr, &size), 0u);
  EXPECT_EQ(size, 8);
}

// cudart's lookups: sent without waiting, each once; the first launch
// reads their replies (layouts and attributes) in one wait.
TEST_F(LaunchTest, LookupsWaitForNothingAndAreAskedOnce) {
  CUlibrary lib;
  ASSERT_EQ(cuLibraryLoadData(&lib, kModule, nullptr, nullptr, 0, nullptr, nullptr, 0),
            CUDA_SUCCESS);
  const uint64_t before = scuda_replies_awaited();
  CUkernel kernel, kernel_again;
  CUfunction fn, fn_again, vadd_again;
  ASSERT_EQ(cuLibraryGetKernel(&kernel, lib, "vadd"), CUDA_SUCCESS);
  ASSERT_EQ(cuLibraryGetKernel(&kernel_again, lib, "vadd"), CUDA_SUCCESS);
  EXPECT_EQ(kernel_again, kernel);
  ASSERT_EQ(cuKernelGetFunction(&fn, kernel), CUDA_SUCCESS);
  ASSERT_EQ(cuKernelGetFunction(&fn_again, kernel), CUDA_SUCCESS);
  EXPECT_EQ(fn_again, fn);
  ASSERT_EQ(cuModuleGetFunction(&vadd_again, mod_, "vadd"), CUDA_SUCCESS);  // as in SetUp
  EXPECT_EQ(vadd_again, vadd_);
  EXPECT_EQ(scuda_replies_awaited(), before);
  int n = kN;
  void* params[] = {&a_, &b_, &c_, &n};
  ASSERT_EQ(cuLaunchKernel(fn, 4, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before + 1);
  int regs = 0;
  ASSERT_EQ(cuKernelGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, kernel, dev_), CUDA_SUCCESS);
  EXPECT_EQ(regs, 32);
  ASSERT_EQ(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, fn), CUDA_SUCCESS);
  EXPECT_EQ(regs, 32);
  EXPECT_EQ(scuda_replies_awaited(), before + 1);
  expect_sums();
  EXPECT_EQ(cuLibraryUnload(lib), CUDA_SUCCESS);
  ASSERT_EQ(cuLibraryGetKernel(&kernel, lib, "vadd"), CUDA_SUCCESS);  // sent: forgotten
  EXPECT_EQ(cuKernelGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, kernel, dev_),
            CUDA_ERROR_INVALID_HANDLE);
}

// A name the library lacks: the lookup cannot say so (it does not wait), so
// each use of the kernel does, as the lookup would have. Not the next
// synchronize: a handle never used has no effect.
TEST_F(LaunchTest, AMissingKernelFailsEachUse) {
  CUlibrary lib;
  ASSERT_EQ(cuLibraryLoadData(&lib, kModule, nullptr, nullptr, 0, nullptr, nullptr, 0),
            CUDA_SUCCESS);
  CUkernel missing, again;
  ASSERT_EQ(cuLibraryGetKernel(&missing, lib, "nope"), CUDA_SUCCESS);
  int n = kN;
  void* params[] = {&a_, &b_, &c_, &n};
  EXPECT_EQ(cuLaunchKernel(reinterpret_cast<CUfunction>(missing), 4, 1, 1, 256, 1, 1, 0, nullptr,
                           params, nullptr),
            CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(cuLibraryGetKernel(&again, lib, "nope"), CUDA_ERROR_NOT_FOUND);
  int regs = 0;
  EXPECT_EQ(cuKernelGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, missing, dev_),
            CUDA_ERROR_NOT_FOUND);
  size_t offset = 0;
  EXPECT_EQ(cuKernelGetParamInfo(missing, 0, &offset, nullptr), CUDA_ERROR_NOT_FOUND);
  CUfunction fn;
  EXPECT_EQ(cuKernelGetFunction(&fn, missing), CUDA_ERROR_NOT_FOUND);
  ASSERT_EQ(cuLibraryGetKernel(&missing, lib, "nothing"), CUDA_SUCCESS);  // never used
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchKernel(vadd_, 4, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  expect_sums();
  EXPECT_EQ(cuLibraryUnload(lib), CUDA_SUCCESS);
}

// Once the session says a stream's or an event's work is done, asking again
// sends nothing until device work is sent (for a stream) or the event is
// recorded again.
TEST_F(LaunchTest, FinishedWorkIsAnsweredWithoutAskingAgain) {
  int n = kN;
  void* params[] = {&a_, &b_, &c_, &n};
  CUstream stream = nullptr;
  CUevent event = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchKernel(vadd_, 4, 1, 1, 256, 1, 1, 0, stream, params, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(event, stream), CUDA_SUCCESS);
  uint64_t before = scuda_replies_awaited();
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  ASSERT_EQ(cuEventQuery(event), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before + 2);
  before = scuda_replies_awaited();
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(cuStreamQuery(stream), CUDA_SUCCESS);
    ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
    ASSERT_EQ(cuEventQuery(event), CUDA_SUCCESS);
    ASSERT_EQ(cuEventSynchronize(event), CUDA_SUCCESS);
  }
  EXPECT_EQ(scuda_replies_awaited(), before) << "done work was asked about again";

  ASSERT_EQ(cuLaunchKernel(vadd_, 4, 1, 1, 256, 1, 1, 0, stream, params, nullptr), CUDA_SUCCESS);
  before = scuda_replies_awaited();
  ASSERT_EQ(cuEventQuery(event), CUDA_SUCCESS);  // not recorded since: still done
  EXPECT_EQ(scuda_replies_awaited(), before);
  ASSERT_EQ(cuStreamQuery(stream), CUDA_SUCCESS);  // new work: asked
  EXPECT_EQ(scuda_replies_awaited(), before + 1);
  ASSERT_EQ(cuEventRecord(event, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuEventQuery(event), CUDA_SUCCESS);  // recorded again: asked
  EXPECT_EQ(scuda_replies_awaited(), before + 2);
  expect_sums();
  EXPECT_EQ(cuEventDestroy(event), CUDA_SUCCESS);

  // An event shared with another process may be recorded there: always asked.
  ASSERT_EQ(cuEventCreate(&event, CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS), CUDA_SUCCESS);
  ASSERT_EQ(cuEventRecord(event, stream), CUDA_SUCCESS);
  CUipcEventHandle shared{};
  ASSERT_EQ(cuIpcGetEventHandle(&shared, event), CUDA_SUCCESS);
  before = scuda_replies_awaited();
  ASSERT_EQ(cuEventQuery(event), CUDA_SUCCESS);
  ASSERT_EQ(cuEventQuery(event), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before + 2);
  EXPECT_EQ(cuEventDestroy(event), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
}

// The driver's error log is the session's: a failed lookup's line reaches a
// buffer here and a file the program names, here, and the iterator moves on.
TEST_F(LaunchTest, DriverLogLinesReachMemoryAndFilesOfTheClient) {
  CUlogIterator it = 0;
  ASSERT_EQ(cuLogsCurrent(&it, 0), CUDA_SUCCESS);
  CUfunction missing = nullptr;
  ASSERT_EQ(cuModuleGetFunction(&missing, mod_, "not_in_the_module"), CUDA_ERROR_NOT_FOUND);
  char buffer[4096];
  size_t size = sizeof buffer;
  ASSERT_EQ(cuLogsDumpToMemory(&it, buffer, &size, 0), CUDA_SUCCESS);
  EXPECT_EQ(size, std::strlen(buffer));
  EXPECT_NE(std::string(buffer).find("not_in_the_module"), std::string::npos) << buffer;
  size = sizeof buffer;
  ASSERT_EQ(cuLogsDumpToMemory(&it, buffer, &size, 0), CUDA_SUCCESS);
  EXPECT_EQ(size, 0u) << "the iterator moved past the lines dumped";
  const std::string path = testing::TempDir() + "scuda_driver_log.txt";
  ASSERT_EQ(cuLogsDumpToFile(nullptr, path.c_str(), 0), CUDA_SUCCESS);
  EXPECT_NE(read_file(path).find("not_in_the_module"), std::string::npos);
  EXPECT_EQ(cuLogsDumpToMemory(&it, nullptr, &size, 0), CUDA_ERROR_INVALID_VALUE);
  std::remove(path.c_str());
}

// A log callback is the program's: the session's driver calls a stand-in,
// which has it run here (on the callback channel) before the failing call
// returns; once unregistered it hears nothing more.
TEST_F(LaunchTest, LogCallbacksRunInTheProgram) {
  static std::vector<std::string> heard;
  heard.clear();
  auto listen = [](void* data, CUlogLevel level, char* message, size_t length) {
    if (data == &heard && level == CU_LOG_LEVEL_ERROR) heard.emplace_back(message, length);
  };
  CUlogsCallbackHandle handle = nullptr;
  ASSERT_EQ(cuLogsRegisterCallback(listen, &heard, &handle), CUDA_SUCCESS);
  ASSERT_NE(handle, nullptr);
  CUfunction missing = nullptr;
  ASSERT_EQ(cuModuleGetFunction(&missing, mod_, "heard_of_nowhere"), CUDA_ERROR_NOT_FOUND);
  ASSERT_EQ(heard.size(), 1u);
  EXPECT_NE(heard[0].find("heard_of_nowhere"), std::string::npos) << heard[0];
  ASSERT_EQ(cuLogsUnregisterCallback(handle), CUDA_SUCCESS);
  ASSERT_EQ(cuModuleGetFunction(&missing, mod_, "heard_of_nowhere_again"), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(heard.size(), 1u);
  EXPECT_EQ(cuLogsRegisterCallback(nullptr, nullptr, &handle), CUDA_ERROR_INVALID_VALUE);
}

// cudart loads every fatbin at its start: small images go whole, without
// waiting; one the driver rejects fails the library's uses.
TEST_F(LaunchTest, LibraryLoadsWaitForNothingAndARejectedOneFailsItsUses) {
  const uint64_t before = scuda_replies_awaited();
  CUlibrary libs[3], rejected;
  for (int i = 0; i < 3; ++i) {
    const std::string image = std::string(kModule) + "kernel only" + std::to_string(i) + " 4\n";
    ASSERT_EQ(cuLibraryLoadData(&libs[i], image.c_str(), nullptr, nullptr, 0, nullptr, nullptr, 0),
              CUDA_SUCCESS);
  }
  ASSERT_EQ(cuLibraryLoadData(&rejected, "scuda-double-module\nnonsense\n", nullptr, nullptr, 0,
                              nullptr, nullptr, 0),
            CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before);
  CUkernel kernel;
  ASSERT_EQ(cuLibraryGetKernel(&kernel, libs[2], "vadd"), CUDA_SUCCESS);
  int n = kN;
  void* params[] = {&a_, &b_, &c_, &n};
  ASSERT_EQ(cuLaunchKernel(reinterpret_cast<CUfunction>(kernel), 4, 1, 1, 256, 1, 1, 0, nullptr,
                           params, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before + 1);  // the lookup's reply, for the layout
  expect_sums();
  EXPECT_EQ(cuLibraryGetKernel(&kernel, rejected, "vadd"), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  for (CUlibrary lib : libs) EXPECT_EQ(cuLibraryUnload(lib), CUDA_SUCCESS);
}

// What cudaFuncGetAttributes asks, for a kernel looked up before any
// context (whose lookup could tell no attributes): all of it at once.
TEST_F(LaunchTest, AttributesTheLookupLackedComeAllAtOnce) {
  CUlibrary lib;
  CUkernel kernel;
  ASSERT_NO_FATAL_FAILURE(look_up_without_context(&lib, &kernel));
  const uint64_t before = scuda_replies_awaited();
  const std::pair<CUfunction_attribute, int> expected[] = {
      {CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
      {CU_FUNC_ATTRIBUTE_NUM_REGS, 32},
      {CU_FUNC_ATTRIBUTE_PTX_VERSION, 90},
      {CU_FUNC_ATTRIBUTE_BINARY_VERSION, 90},
      {CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 49152}};
  for (const auto& [attr, value] : expected) {
    int got = -1;
    ASSERT_EQ(cuKernelGetAttribute(&got, attr, kernel, dev_), CUDA_SUCCESS);
    EXPECT_EQ(got, value) << attr;
  }
  // One wait reads the lookup's reply, one fetches every attribute.
  EXPECT_EQ(scuda_replies_awaited(), before + 2);
  EXPECT_EQ(cuLibraryUnload(lib), CUDA_SUCCESS);
}

// What kernels print on the server reaches the program's stdout, in order,
// by the time a synchronizing call returns.
TEST_F(LaunchTest, KernelOutputReachesTheProgramsStdout) {
  CUfunction say = nullptr;
  ASSERT_EQ(cuModuleGetFunction(&say, mod_, "say"), CUDA_SUCCESS);
  testing::internal::CaptureStdout();
  for (int n : {1, 2, 3}) {
    void* params[] = {&n};
    ASSERT_EQ(cuLaunchKernel(say, 1, 1, 1, 1, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  }
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  EXPECT_EQ(testing::internal::GetCapturedStdout(), "say 1\nsay 2\nsay 3\n");
}

void append_to(void* log) { static_cast<std::vector<int>*>(log)->push_back(7); }

// Host callbacks run on the client, in stream order, by the time the
// stream's synchronize returns.
TEST_F(LaunchTest, HostCallbacksRunInStreamOrderBySynchronize) {
  CUstream s;
  ASSERT_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  std::vector<int> log;
  int n = kN;
  void* params[] = {&a_, &b_, &c_, &n};
  ASSERT_EQ(cuLaunchHostFunc(s, append_to, &log), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchKernel(vadd_, 4, 1, 1, 256, 1, 1, 0, s, params, nullptr), CUDA_SUCCESS);
  auto callback = [](CUstream, CUresult status, void* p) {
    static_cast<std::vector<int>*>(p)->push_back(status == CUDA_SUCCESS ? 8 : -1);
  };
  ASSERT_EQ(cuStreamAddCallback(s, callback, &log, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchHostFunc(s, append_to, &log), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamAddCallback(s, callback, &log, 1), CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(log, (std::vector<int>{7, 8, 7}));
  expect_sums();
  EXPECT_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
}

TEST_F(LaunchTest, ParameterLayoutComesWithTheFunction) {
  size_t offset = 0, size = 0;
  ASSERT_EQ(cuFuncGetParamInfo(vadd_, 3, &offset, &size), CUDA_SUCCESS);
  EXPECT_EQ(offset, 24u);
  EXPECT_EQ(size, 4u);
  EXPECT_EQ(cuFuncGetParamInfo(vadd_, 4, &offset, &size), CUDA_ERROR_INVALID_VALUE);
}

TEST_F(LaunchTest, KernelParamsArriveByteExact) {
  int n = kN;
  void* params[] = {&a_, &b_, &c_, &n};
  ASSERT_EQ(cuLaunchKernel(vadd_, 4, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
  expect_sums();
  uint8_t packed[28];
  std::memcpy(packed, &a_, 8);
  std::memcpy(packed + 8, &b_, 8);
  std::memcpy(packed + 16, &c_, 8);
  std::memcpy(packed + 24, &n, 4);
  std::string hex;
  for (uint8_t byte : packed)
    hex += "0123456789abcdef"[byte >> 4], hex += "0123456789abcdef"[byte & 15];
  const std::string log = read_file(scuda::test::shared_server().launch_log());
  EXPECT_NE(log.find("launch vadd grid=4,1,1 block=256,1,1 shmem=0 params=" + hex),
            std::string::npos)
      << log;
}

TEST_F(LaunchTest, ExtraBufferFormLaunches) {
  struct {
    CUdeviceptr a, b, c;
    int n;
  } args{a_, b_, c_, kN};
  size_t size = 28;
  void* extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &args, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
                   CU_LAUNCH_PARAM_END};
  ASSERT_EQ(cuLaunchKernel(vadd_, 4, 1, 1, 256, 1, 1, 0, nullptr, nullptr, extra), CUDA_SUCCESS);
  expect_sums();
}

// The launch API before cuLaunchKernel: block shape and arguments set on
// the function, pointers through cuParamSetv, then cuLaunchGrid. Deprecated,
// and still served: programs built against it call it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST_F(LaunchTest, LegacyParameterSettersAndLaunchGrid) {
  ASSERT_EQ(cuFuncSetBlockShape(vadd_, 256, 1, 1), CUDA_SUCCESS);
  ASSERT_EQ(cuParamSetSize(vadd_, 28), CUDA_SUCCESS);
  ASSERT_EQ(cuParamSetv(vadd_, 0, &a_, sizeof a_), CUDA_SUCCESS);
  const CUdeviceptr bc[] = {b_, c_};
  ASSERT_EQ(cuParamSetv(vadd_, 8, const_cast<CUdeviceptr*>(bc), sizeof bc), CUDA_SUCCESS);
  ASSERT_EQ(cuParamSeti(vadd_, 24, kN), CUDA_SUCCESS);
  ASSERT_EQ(cuLaunchGrid(vadd_, 4, 1), CUDA_SUCCESS);
  expect_sums();
  EXPECT_EQ(cuParamSetv(vadd_, 0, nullptr, 8), CUDA_ERROR_INVALID_VALUE);
}
#pragma GCC diagnostic pop

TEST_F(LaunchTest, LaunchKernelExWithLibraryKernel) {
  CUlibrary lib;
  CUkernel kernel;
  CUfunction fn;
  ASSERT_EQ(cuLibraryLoadData(&lib, kModule, nullptr, nullptr, 0, nullptr, nullptr, 0),
            CUDA_SUCCESS);
  ASSERT_EQ(cuLibraryGetKernel(&kernel, lib, "vadd"), CUDA_SUCCESS);
  // The kernel's attributes come with its lookup's reply: reading it is the
  // only wait.
  const uint64_t before = scuda_replies_awaited();
  int regs = 0;
  ASSERT_EQ(cuKernelGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, kernel, dev_), CUDA_SUCCESS);
  EXPECT_EQ(regs, 32);
  ASSERT_EQ(cuKernelGetAttribute(&regs, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, kernel, dev_),
            CUDA_SUCCESS);
  EXPECT_EQ(regs, 1024);
  EXPECT_EQ(scuda_replies_awaited(), before + 1);
  ASSERT_EQ(cuKernelGetFunction(&fn, kernel), CUDA_SUCCESS);
  int n = kN;
  void* params[] = {&a_, &b_, &c_, &n};
  CUlaunchConfig config{};
  config.gridDimX = 4;
  config.gridDimY = config.gridDimZ = 1;
  config.blockDimX = 256;
  config.blockDimY = config.blockDimZ = 1;
  ASSERT_EQ(cuLaunchKernelEx(&config, fn, params, nullptr), CUDA_SUCCESS);
  expect_sums();
  // A CUkernel is accepted where a CUfunction is expected.
  ASSERT_EQ(cuLaunchKernel(reinterpret_cast<CUfunction>(kernel), 4, 1, 1, 256, 1, 1, 0, nullptr,
                           params, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(cuLibraryUnload(lib), CUDA_SUCCESS);
}

// cudart looks a kernel up before any context is current, when the driver
// cannot tell its parameters; the client asks again at its first launch.
TEST_F(LaunchTest, KernelLookedUpBeforeAnyContextLaunches) {
  CUlibrary lib;
  CUkernel kernel;
  ASSERT_NO_FATAL_FAILURE(look_up_without_context(&lib, &kernel));
  int n = kN;
  void* params[] = {&a_, &b_, &c_, &n};
  ASSERT_EQ(cuLaunchKernel(reinterpret_cast<CUfunction>(kernel), 4, 1, 1, 256, 1, 1, 0, nullptr,
                           params, nullptr),
            CUDA_SUCCESS);
  expect_sums();
  size_t offset = 0, size = 0;
  EXPECT_EQ(cuKernelGetParamInfo(kernel, 3, &offset, &size), CUDA_SUCCESS);
  EXPECT_EQ(size, 4u);
  EXPECT_EQ(cuLibraryUnload(lib), CUDA_SUCCESS);
}

TEST_F(LaunchTest, ErrorsCarryTheDriversCodes) {
  int n = kN;
  void* params[] = {&a_, &b_, &c_, &n};
  EXPECT_EQ(cuLaunchKernel(vadd_, 0, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  CUfunction missing;
  EXPECT_EQ(cuModuleGetFunction(&missing, mod_, "nope"), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(cuMemFree(0x1234), CUDA_ERROR_INVALID_VALUE);
  std::vector<uint8_t> big(kN * sizeof(float) + 1);
  EXPECT_EQ(cuMemcpyHtoD(a_, big.data(), big.size()), CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuLaunchKernel(vadd_, 1, 1, 1, 2048, 1, 1, 0, nullptr, params, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  CUmodule bad;
  EXPECT_EQ(cuModuleLoadData(&bad, "not a module"), CUDA_ERROR_INVALID_IMAGE);
  EXPECT_EQ(cuStreamSynchronize(reinterpret_cast<CUstream>(0x7777000)), CUDA_ERROR_INVALID_HANDLE);
  // The session survives every error above.
  ASSERT_EQ(cuLaunchKernel(vadd_, 4, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  expect_sums();
}

TEST_F(LaunchTest, LaunchErrorsSurfaceAtTheNextSynchronizingCall) {
  CUdeviceptr nowhere = 0x10;
  int n = kN;
  void* params[] = {&a_, &b_, &nowhere, &n};
  // Launches are one-way: the fault is latched on the server...
  EXPECT_EQ(cuLaunchKernel(vadd_, 4, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr), CUDA_SUCCESS);
  // ...and reported by the call that synchronizes, not lost.
  EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_ILLEGAL_ADDRESS);
}

TEST_F(DriverTest, OneWayCreatesHandOutWorkingHandles) {
  CUstream s;
  CUevent e;
  ASSERT_EQ(cuStreamCreate(&s, 0), CUDA_SUCCESS);
  ASSERT_EQ(cuEventCreate(&e, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuEventRecord(e, s), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamWaitEvent(nullptr, e, 0), CUDA_SUCCESS);
  EXPECT_EQ(cuEventSynchronize(e), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamSynchronize(s), CUDA_SUCCESS);
  EXPECT_EQ(cuEventDestroy(e), CUDA_SUCCESS);
  EXPECT_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
  // Destroying a stream twice is an error of a one-way call: the next
  // synchronizing call reports it.
  EXPECT_EQ(cuStreamDestroy(s), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_ERROR_INVALID_HANDLE);
  EXPECT_EQ(cuCtxSynchronize(), CUDA_SUCCESS);
}

// Every function of a module, with ids the client can launch, as
// cuModuleEnumerateFunctions and cuFFT's export-table slot hand them out.
TEST_F(DriverTest, ModuleFunctionsAreEnumerated) {
  CUmodule mod = nullptr;
  ASSERT_EQ(cuModuleLoadData(&mod, kModule), CUDA_SUCCESS);
  unsigned count = 0;
  ASSERT_EQ(cuModuleGetFunctionCount(&count, mod), CUDA_SUCCESS);
  ASSERT_EQ(count, 3u);
  std::vector<CUfunction> functions(count);
  ASSERT_EQ(cuModuleEnumerateFunctions(functions.data(), count, mod), CUDA_SUCCESS);
  std::vector<std::string> names;
  for (CUfunction fn : functions) {
    const char* name = nullptr;
    ASSERT_EQ(cuFuncGetName(&name, fn), CUDA_SUCCESS);
    names.emplace_back(name);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"fill", "say", "vadd"}));
  CUfunction vadd = nullptr;
  ASSERT_EQ(cuModuleGetFunction(&vadd, mod, "vadd"), CUDA_SUCCESS);
  EXPECT_EQ(functions[2], vadd);

  const void* table = nullptr;
  const CUuuid cufft_table = {{0x6e, 0x16, 0x3f, (char)0xbe, (char)0xb9, 0x58, 0x44, 0x4d,
                               (char)0x83, 0x5c, (char)0xe1, (char)0x82, (char)0xaf, (char)0xf1,
                               (char)0x99, 0x1e}};
  ASSERT_EQ(cuGetExportTable(&table, &cufft_table), CUDA_SUCCESS);
  using Visitor = uint64_t (*)(void*, CUfunction, const char*, uint64_t, uint64_t, CUmodule);
  using Slot7 = uint64_t (*)(CUcontext, CUmodule, Visitor, void*);
  auto slot7 = reinterpret_cast<Slot7>(static_cast<void* const*>(table)[7]);
  std::vector<std::pair<CUfunction, std::string>> seen;
  Visitor visit = [](void* opaque, CUfunction fn, const char* name, uint64_t, uint64_t,
                     CUmodule) -> uint64_t {
    static_cast<decltype(seen)*>(opaque)->emplace_back(fn, name);
    return 0;
  };
  EXPECT_EQ(slot7(nullptr, mod, visit, &seen), 3u);
  ASSERT_EQ(seen.size(), 3u);
  EXPECT_EQ(seen[2], std::make_pair(vadd, std::string("vadd")));
  EXPECT_EQ(cuModuleUnload(mod), CUDA_SUCCESS);
}

TEST_F(DriverTest, LibraryKernelsAreEnumerated) {
  CUlibrary lib = nullptr;
  ASSERT_EQ(cuLibraryLoadData(&lib, kModule, nullptr, nullptr, 0, nullptr, nullptr, 0),
            CUDA_SUCCESS);
  unsigned count = 0;
  ASSERT_EQ(cuLibraryGetKernelCount(&count, lib), CUDA_SUCCESS);
  ASSERT_EQ(count, 3u);
  std::vector<CUkernel> kernels(count);
  ASSERT_EQ(cuLibraryEnumerateKernels(kernels.data(), count, lib), CUDA_SUCCESS);
  CUkernel say = nullptr;
  ASSERT_EQ(cuLibraryGetKernel(&say, lib, "say"), CUDA_SUCCESS);
  EXPECT_EQ(kernels[1], say);
  const char* name = nullptr;
  ASSERT_EQ(cuKernelGetName(&name, kernels[0]), CUDA_SUCCESS);
  EXPECT_STREQ(name, "fill");
  EXPECT_EQ(cuLibraryUnload(lib), CUDA_SUCCESS);
}

TEST_F(DriverTest, UnsupportedFunctionsSaySo) {
  CUexternalMemory memory = nullptr;
  CUDA_EXTERNAL_MEMORY_HANDLE_DESC desc{};
  EXPECT_EQ(cuImportExternalMemory(&memory, &desc), CUDA_ERROR_NOT_SUPPORTED);
}

TEST_F(DriverTest, ProcAddressPicksVersionedAndPerThreadVariants) {
  void* fn = nullptr;
  CUdriverProcAddressQueryResult status;
  ASSERT_EQ(cuGetProcAddress("cuMemAlloc", &fn, 13000, CU_GET_PROC_ADDRESS_DEFAULT, &status),
            CUDA_SUCCESS);
  EXPECT_EQ(fn, reinterpret_cast<void*>(&cuMemAlloc_v2));
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SUCCESS);
  ASSERT_EQ(cuGetProcAddress("cuMemcpyHtoDAsync", &fn, 13000,
                             CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &status),
            CUDA_SUCCESS);
  EXPECT_NE(fn, reinterpret_cast<void*>(&cuMemcpyHtoDAsync_v2));
  EXPECT_EQ(cuGetProcAddress("cuNoSuchThing", &fn, 13000, 0, &status), CUDA_ERROR_NOT_FOUND);
  EXPECT_EQ(status, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
}

// cuBLAS 13 finds these with dlsym under the driver's old names: one
// missing name makes cublasCreate fail.
TEST_F(DriverTest, OldDriverSymbolsAreExportedAndWork) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr);
  for (const char* name : {"cuCtxPushCurrent", "cuCtxPopCurrent", "cuDevicePrimaryCtxRelease",
                           "cuDevicePrimaryCtxReset", "cuEventElapsedTime", "cuStreamWaitValue32",
                           "cuStreamBatchMemOp", "cuStreamGetCaptureInfo_v2",
                           "cuGraphKernelNodeGetParams", "cuGraphExecKernelNodeSetParams",
                           "cuGraphInstantiate", "cuMemPrefetchAsync", "cuGetProcAddress"}) {
    EXPECT_NE(dlsym(lib, name), nullptr) << name;
  }
  using Push = CUresult (*)(CUcontext);
  using Pop = CUresult (*)(CUcontext*);
  auto push = reinterpret_cast<Push>(dlsym(lib, "cuCtxPushCurrent"));
  auto pop = reinterpret_cast<Pop>(dlsym(lib, "cuCtxPopCurrent"));
  ASSERT_EQ(push(ctx_), CUDA_SUCCESS);
  CUcontext popped = nullptr;
  ASSERT_EQ(pop(&popped), CUDA_SUCCESS);
  EXPECT_EQ(popped, ctx_);

  using GetProcV1 = CUresult (*)(const char*, void**, int, cuuint64_t);
  auto get_proc = reinterpret_cast<GetProcV1>(dlsym(lib, "cuGetProcAddress"));
  void* fn = nullptr;
  ASSERT_EQ(get_proc("cuMemAlloc", &fn, 13000, 0), CUDA_SUCCESS);
  EXPECT_EQ(fn, reinterpret_cast<void*>(&cuMemAlloc_v2));
  ASSERT_EQ(get_proc("cuDevicePrimaryCtxRelease", &fn, 7000, 0), CUDA_SUCCESS);
  EXPECT_NE(fn, nullptr);
  dlclose(lib);
}

TEST_F(DriverTest, CaptureInfoReportsAStreamThatIsNotCapturing) {
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, 0), CUDA_SUCCESS);
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_ACTIVE;
  cuuint64_t id = 7;
  const uint64_t before = scuda_replies_awaited();
  ASSERT_EQ(cuStreamGetCaptureInfo(stream, &status, &id, nullptr, nullptr, nullptr, nullptr),
            CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before);  // no capture begun yet: answered locally
  EXPECT_EQ(status, CU_STREAM_CAPTURE_STATUS_NONE);
  EXPECT_EQ(id, 7u);
  EXPECT_EQ(cuStreamGetCaptureInfo(stream, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
}

TEST_F(DriverTest, ErrorNamesAreAnsweredLocally) {
  const char* name = nullptr;
  const char* text = nullptr;
  ASSERT_EQ(cuGetErrorName(CUDA_ERROR_INVALID_VALUE, &name), CUDA_SUCCESS);
  EXPECT_STREQ(name, "CUDA_ERROR_INVALID_VALUE");
  ASSERT_EQ(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &text), CUDA_SUCCESS);
  EXPECT_NE(std::string(text).find("memory"), std::string::npos);
}

}  // namespace
