// Every GPU of a server: against a server whose double shows two devices
// (SCUDA_DOUBLE_DEVICES=2, 16 GiB each), the client sees both with their own
// facts, places allocations on each one-way in that device's ranges, copies
// between them with cuMemcpyPeer, and runs a context on each from two
// threads; a server started with CUDA_VISIBLE_DEVICES offers the device it
// names.
#include <cuda.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "device_checks.h"
#include "lanes_opened.h"
#include "protocol/ops.h"
#include "server_process.h"

extern "C" uint64_t scuda_replies_awaited();
extern "C" int scuda_set_compression(const char* mode);
extern "C" uint64_t scuda_lane_bytes();

namespace {

constexpr size_t kMiB = size_t{1} << 20;
constexpr size_t kTotal = size_t{16} << 30;

scuda::test::ServerProcess* server = nullptr;

// The double's devices and memory are set before the server starts: its
// session processes inherit them.
class TwoDeviceServer : public ::testing::Environment {
 public:
  void SetUp() override {
    setenv("SCUDA_DOUBLE_DEVICES", "2", 1);
    setenv("SCUDA_DOUBLE_TOTAL_MEMORY", std::to_string(kTotal).c_str(), 1);
    server = new scuda::test::ServerProcess();
    setenv("SCUDA_SERVER", server->address().c_str(), 1);
  }
  void TearDown() override { delete server; }
};

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new TwoDeviceServer);

using scuda::test::device_of;
using scuda::test::pattern;

size_t free_memory() {
  size_t free = 0, total = 0;
  EXPECT_EQ(cuMemGetInfo(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(total, kTotal);
  return free;
}

// Both devices' primary contexts retained, device 0's current; each device's
// first allocation (which reserves its range, one round trip) done.
class MultiGpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(cuInit(0), CUDA_SUCCESS);
    for (CUdevice dev = 0; dev < 2; ++dev) {
      ASSERT_EQ(cuDevicePrimaryCtxRetain(&ctx_[dev], dev), CUDA_SUCCESS);
      ASSERT_EQ(cuCtxSetCurrent(ctx_[dev]), CUDA_SUCCESS);
      CUdeviceptr first = 0;
      ASSERT_EQ(cuMemAlloc(&first, 2 * kMiB), CUDA_SUCCESS);
      ASSERT_EQ(cuMemFree(first), CUDA_SUCCESS);
    }
    ASSERT_EQ(cuCtxSetCurrent(ctx_[0]), CUDA_SUCCESS);
  }
  void TearDown() override {
    for (CUdevice dev = 0; dev < 2; ++dev) cuDevicePrimaryCtxRelease(dev);
  }

  CUcontext ctx_[2] = {};
};

TEST_F(MultiGpuTest, TheClientSeesBothDevicesWithTheirOwnFacts) {
  int count = 0;
  ASSERT_EQ(cuDeviceGetCount(&count), CUDA_SUCCESS);
  ASSERT_EQ(count, 2);
  CUuuid uuid[2];
  for (CUdevice dev = 0; dev < 2; ++dev) {
    char name[64] = {}, bus[32] = {};
    ASSERT_EQ(cuDeviceGetName(name, sizeof name, dev), CUDA_SUCCESS);
    EXPECT_STREQ(name, "scuda test double");
    ASSERT_EQ(cuDeviceGetPCIBusId(bus, sizeof bus, dev), CUDA_SUCCESS);
    EXPECT_EQ(std::string(bus), dev == 0 ? "0000:42:00.0" : "0000:43:00.0");
    int pci_bus = 0;
    ASSERT_EQ(cuDeviceGetAttribute(&pci_bus, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, dev), CUDA_SUCCESS);
    EXPECT_EQ(pci_bus, 0x42 + dev);
    size_t total = 0;
    ASSERT_EQ(cuDeviceTotalMem(&total, dev), CUDA_SUCCESS);
    EXPECT_EQ(total, kTotal);
    ASSERT_EQ(cuDeviceGetUuid(&uuid[dev], dev), CUDA_SUCCESS);
  }
  EXPECT_NE(std::memcmp(uuid[0].bytes, uuid[1].bytes, sizeof uuid[0].bytes), 0);
  CUdevice dev = -1;
  EXPECT_EQ(cuDeviceGet(&dev, 1), CUDA_SUCCESS);
  EXPECT_EQ(dev, 1);
  EXPECT_EQ(cuDeviceGet(&dev, 2), CUDA_ERROR_INVALID_DEVICE);
}

TEST_F(MultiGpuTest, AllocationsOnEachDeviceGoOneWayAndBelongToIt) {
  std::vector<CUdeviceptr> ptrs[2];
  size_t before_free[2];
  for (CUdevice dev = 0; dev < 2; ++dev) {
    ASSERT_EQ(cuCtxSetCurrent(ctx_[dev]), CUDA_SUCCESS);
    before_free[dev] = free_memory();
    const uint64_t before = scuda_replies_awaited();
    for (size_t size : {2 * kMiB, 20 * kMiB, size_t{4096}}) {
      CUdeviceptr p = 0;
      ASSERT_EQ(cuMemAlloc(&p, size), CUDA_SUCCESS);
      ptrs[dev].push_back(p);
    }
    EXPECT_EQ(scuda_replies_awaited(), before) << "allocations on device " << dev << " waited";
  }
  for (CUdevice dev = 0; dev < 2; ++dev) {
    for (CUdeviceptr p : ptrs[dev]) EXPECT_EQ(device_of(p), dev) << std::hex << p;
    ASSERT_EQ(cuCtxSetCurrent(ctx_[dev]), CUDA_SUCCESS);
    EXPECT_EQ(free_memory(), before_free[dev] - 2 * kMiB - 20 * kMiB - 2 * kMiB)
        << "each device's memory counts its own allocations (the small one's chunk)";
  }
  // Freed from device 0's context, whichever device's memory it is.
  ASSERT_EQ(cuCtxSetCurrent(ctx_[0]), CUDA_SUCCESS);
  const uint64_t before = scuda_replies_awaited();
  for (CUdevice dev = 0; dev < 2; ++dev)
    for (CUdeviceptr p : ptrs[dev]) EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited(), before) << "frees waited";
  ASSERT_EQ(cuCtxSetCurrent(ctx_[1]), CUDA_SUCCESS);
  EXPECT_EQ(free_memory(), before_free[1] - 2 * kMiB) << "only device 1's spare chunk is left";
}

TEST_F(MultiGpuTest, PeerCopiesMoveTheBytesBetweenDevices) {
  int can = -1;
  ASSERT_EQ(cuDeviceCanAccessPeer(&can, 0, 1), CUDA_SUCCESS);
  EXPECT_EQ(can, 1);
  ASSERT_EQ(cuDeviceCanAccessPeer(&can, 1, 1), CUDA_SUCCESS);
  EXPECT_EQ(can, 0);
  const size_t size = 6 * kMiB + 123;
  const std::vector<uint8_t> data = pattern(size, 7);
  CUdeviceptr on0 = 0, on1 = 0, back = 0;
  ASSERT_EQ(cuMemAlloc(&on0, size), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&back, size), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyHtoD(on0, data.data(), size), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx_[1]), CUDA_SUCCESS);
  ASSERT_EQ(cuMemAlloc(&on1, size), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyPeer(on1, ctx_[1], on0, ctx_[0], size), CUDA_SUCCESS);
  std::vector<uint8_t> read(size);
  ASSERT_EQ(cuMemcpyDtoH(read.data(), on1, size), CUDA_SUCCESS);
  EXPECT_EQ(read, data) << "device 0 -> device 1";

  ASSERT_EQ(cuMemsetD8(on1, 0x5a, 1000), CUDA_SUCCESS);
  CUstream stream = nullptr;
  ASSERT_EQ(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);
  ASSERT_EQ(cuMemcpyPeerAsync(back, ctx_[0], on1, ctx_[1], size, stream), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamSynchronize(stream), CUDA_SUCCESS);
  ASSERT_EQ(cuStreamDestroy(stream), CUDA_SUCCESS);
  ASSERT_EQ(cuCtxSetCurrent(ctx_[0]), CUDA_SUCCESS);
  std::vector<uint8_t> expected = data;
  std::memset(expected.data(), 0x5a, 1000);
  ASSERT_EQ(cuMemcpyDtoH(read.data(), back, size), CUDA_SUCCESS);
  EXPECT_EQ(read, expected) << "device 1 -> device 0, asynchronously";
  for (CUdeviceptr p : {on0, on1, back}) EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
}

// Peer access does not open memory mapped with cuMemMap, as the client's
// allocations are: the server gives the peer access when it maps them.
TEST_F(MultiGpuTest, EachDevicesAllocationsAreOpenToThePeer) {
  CUdeviceptr on[2] = {};
  for (CUdevice dev = 0; dev < 2; ++dev) {
    ASSERT_EQ(cuCtxSetCurrent(ctx_[dev]), CUDA_SUCCESS);
    ASSERT_EQ(cuMemAlloc(&on[dev], 4 * kMiB), CUDA_SUCCESS);
  }
  for (CUdevice dev = 0; dev < 2; ++dev) {
    for (CUdevice reader = 0; reader < 2; ++reader) {
      const CUmemLocation where{CU_MEM_LOCATION_TYPE_DEVICE, reader};
      unsigned long long flags = 0;
      ASSERT_EQ(cuMemGetAccess(&flags, &where, on[dev]), CUDA_SUCCESS);
      EXPECT_EQ(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
          << "device " << reader << " reading device " << dev << "'s memory";
    }
  }
  for (CUdeviceptr p : on) EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
}

// cuMemSetAccess with a descriptor per device: every descriptor reaches the
// driver, not only the first.
TEST_F(MultiGpuTest, AccessForBothDevicesTakesEveryDescriptor) {
  scuda::test::OwnMapping mapping(0, 2 * kMiB, 2 * kMiB);
  ASSERT_TRUE(mapping.ok());
  const CUmemAccessDesc access[2] = {
      {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE},
      {{CU_MEM_LOCATION_TYPE_DEVICE, 1}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE}};
  ASSERT_EQ(cuMemSetAccess(mapping.address(), 2 * kMiB, access, 2), CUDA_SUCCESS);
  for (int dev = 0; dev < 2; ++dev) {
    unsigned long long flags = 0;
    const CUmemLocation where{CU_MEM_LOCATION_TYPE_DEVICE, dev};
    ASSERT_EQ(cuMemGetAccess(&flags, &where, mapping.address()), CUDA_SUCCESS);
    EXPECT_EQ(flags, CU_MEM_ACCESS_FLAGS_PROT_READWRITE) << "device " << dev;
  }
}

TEST_F(MultiGpuTest, PeerAccessIsEnabledOnTheServer) {
  ASSERT_EQ(cuCtxEnablePeerAccess(ctx_[1], 0), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxEnablePeerAccess(ctx_[1], 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
  EXPECT_EQ(cuCtxEnablePeerAccess(ctx_[0], 0), CUDA_ERROR_INVALID_DEVICE) << "its own device";
  EXPECT_EQ(cuCtxDisablePeerAccess(ctx_[1]), CUDA_SUCCESS);
  EXPECT_EQ(cuCtxDisablePeerAccess(ctx_[1]), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
}

// Copies this large cross the lanes on device 1 as on device 0. lz4 is off,
// as lanes carry none.
TEST_F(MultiGpuTest, LargeCopiesOnTheSecondDeviceCrossTheLanes) {
  const size_t size = 9 * scuda::protocol::kLaneStripe + 12345;
  ASSERT_EQ(scuda_set_compression("off"), 0);
  ASSERT_EQ(cuCtxSetCurrent(ctx_[1]), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  ASSERT_EQ(cuMemAlloc(&p, size), CUDA_SUCCESS);
  ASSERT_NO_FATAL_FAILURE(scuda::test::open_lanes(p, size));
  ASSERT_GT(scuda_lanes_open(), 1u);
  const std::vector<uint8_t> data = pattern(size, 11);
  const uint64_t before = scuda_lane_bytes();
  ASSERT_EQ(cuMemcpyHtoD(p, data.data(), size), CUDA_SUCCESS);
  std::vector<uint8_t> back(size);
  ASSERT_EQ(cuMemcpyDtoH(back.data(), p, size), CUDA_SUCCESS);
  EXPECT_TRUE(back == data);
  EXPECT_EQ(scuda_lane_bytes() - before, 2 * size);
  EXPECT_EQ(device_of(p), 1);
  EXPECT_EQ(cuMemFree(p), CUDA_SUCCESS);
  scuda_set_compression("auto");
}

// Each thread makes a context of its own device, and its work stays there.
TEST_F(MultiGpuTest, ContextsOnBothDevicesFromTwoThreads) {
  std::vector<uint8_t> read[2];
  CUdevice seen[2] = {-1, -1};
  int ordinal[2] = {-1, -1};
  auto work = [&](CUdevice dev) {
    CUcontext ctx = nullptr;
    if (cuCtxCreate(&ctx, nullptr, 0, dev) != CUDA_SUCCESS) return;
    cuCtxGetDevice(&seen[dev]);
    const size_t size = 3 * kMiB + dev;
    const std::vector<uint8_t> data = pattern(size, 3 + dev);
    CUdeviceptr p = 0;
    if (cuMemAlloc(&p, size) == CUDA_SUCCESS) {
      ordinal[dev] = device_of(p);
      read[dev].resize(size);
      cuMemcpyHtoD(p, data.data(), size);
      cuMemcpyDtoH(read[dev].data(), p, size);
      if (read[dev] != data) read[dev].clear();
      cuMemFree(p);
    }
    cuCtxDestroy(ctx);
  };
  std::thread one(work, 0), two(work, 1);
  one.join();
  two.join();
  for (CUdevice dev = 0; dev < 2; ++dev) {
    EXPECT_EQ(seen[dev], dev);
    EXPECT_EQ(ordinal[dev], dev);
    EXPECT_EQ(read[dev].size(), 3 * kMiB + dev) << "device " << dev << "'s bytes came back wrong";
  }
}

// CUDA_VISIBLE_DEVICES in the server's environment picks the devices its
// sessions offer, as it picks a local program's: here the second.
TEST(MultiGpuVisibleDevices, TheServerOffersTheDevicesItWasGiven) {
  setenv("CUDA_VISIBLE_DEVICES", "1", 1);
  scuda::test::ServerProcess second;
  unsetenv("CUDA_VISIBLE_DEVICES");
  const scuda::test::Output o =
      scuda::test::run_program({CLIENT_TOOL, "devices"}, {"SCUDA_SERVER=" + second.address()});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "devices 1\ndevice 0 0000:43:00.0\n");
  EXPECT_NE(second.output().find("1 GPU:"), std::string::npos) << second.output();
}

// A server whose double shows three devices, with the server's own
// CUDA_VISIBLE_DEVICES `offered` (empty: unset).
std::unique_ptr<scuda::test::ServerProcess> three_device_server(const char* offered = "") {
  setenv("SCUDA_DOUBLE_DEVICES", "3", 1);
  if (*offered) setenv("CUDA_VISIBLE_DEVICES", offered, 1);
  auto s = std::make_unique<scuda::test::ServerProcess>();
  unsetenv("CUDA_VISIBLE_DEVICES");
  setenv("SCUDA_DOUBLE_DEVICES", "2", 1);
  return s;
}

scuda::test::Output devices_with(const scuda::test::ServerProcess& s, const std::string& visible) {
  return scuda::test::run_program(
      {CLIENT_TOOL, "devices"}, {"SCUDA_SERVER=" + s.address(), "CUDA_VISIBLE_DEVICES=" + visible});
}

// The UUID the double gives its device `physical`, as CUDA_VISIBLE_DEVICES
// names it ("scuda-test-dbl01" in hexadecimal, then ...02, ...03).
std::string double_uuid(int physical) {
  return "GPU-73637564-612d-7465-7374-2d64626c30" + std::to_string(31 + physical);
}

// The client's CUDA_VISIBLE_DEVICES picks among the server's GPUs, in its
// order, as it does among a local driver's.
TEST(MultiGpuVisibleDevices, TheClientsListPicksAndOrdersTheServersGpus) {
  const auto s = three_device_server();
  scuda::test::Output o = devices_with(*s, "2,0");
  EXPECT_EQ(o.out, "devices 2\ndevice 0 0000:44:00.0\ndevice 1 0000:42:00.0\n") << o.err;
  o = devices_with(*s, double_uuid(1));
  EXPECT_EQ(o.out, "devices 1\ndevice 0 0000:43:00.0\n") << o.err;
  o = devices_with(*s, "1,7,0");  // read up to the first entry that names none
  EXPECT_EQ(o.out, "devices 1\ndevice 0 0000:43:00.0\n") << o.err;
}

TEST(MultiGpuVisibleDevices, AListThatNamesNoGpuIsRefusedAndSaysWhichThereAre) {
  const auto s = three_device_server();
  for (const std::string visible : {"5", "", "GPU-7363"}) {  // the last names all three
    const scuda::test::Output o = devices_with(*s, visible);
    EXPECT_NE(o.exit_code, 0) << visible;
    EXPECT_NE(o.err.find("names none of the 3 GPUs this server offers"), std::string::npos)
        << visible << ": " << o.err;
    EXPECT_NE(o.err.find(double_uuid(2)), std::string::npos) << o.err;
  }
}

// The client's list indexes the GPUs the server offers; a GPU the server's
// own CUDA_VISIBLE_DEVICES hides stays hidden, even named by its UUID.
TEST(MultiGpuVisibleDevices, TheServersOwnListStillHolds) {
  const auto s = three_device_server("1,2");
  scuda::test::Output o = devices_with(*s, "1");
  EXPECT_EQ(o.out, "devices 1\ndevice 0 0000:44:00.0\n") << o.err;
  o = devices_with(*s, double_uuid(0));
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.err.find("names none of the 2 GPUs"), std::string::npos) << o.err;
}

// Given several servers, the client's list picks from all their GPUs as one
// list (the first server's three, then the second's two), in its order.
TEST(MultiGpuVisibleDevices, OverSeveralServersTheListPicksFromAllTheirGpus) {
  const auto three = three_device_server();
  scuda::test::ServerProcess two;
  const std::string servers = "SCUDA_SERVER=" + three->address() + "," + two.address();
  scuda::test::Output o = scuda::test::run_program(
      {CLIENT_TOOL, "devices"}, {servers, "SCUDA_PICK=", "CUDA_VISIBLE_DEVICES=3,2"});
  EXPECT_EQ(o.out, "devices 2\ndevice 0 0000:42:00.0\ndevice 1 0000:44:00.0\n") << o.err;
  o = scuda::test::run_program({CLIENT_TOOL, "devices"},
                               {servers, "SCUDA_PICK=", "CUDA_VISIBLE_DEVICES=4,0,9,1"});
  EXPECT_EQ(o.out, "devices 2\ndevice 0 0000:43:00.0\ndevice 1 0000:42:00.0\n") << o.err;
  // Both servers' doubles give their first GPU one UUID: it names two.
  o = scuda::test::run_program({CLIENT_TOOL, "devices"},
                               {servers, "SCUDA_PICK=", "CUDA_VISIBLE_DEVICES=" + double_uuid(0)});
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.err.find("names none of the GPUs of the 2 servers"), std::string::npos) << o.err;
}

}  // namespace
