// NVML through two servers at once (SCUDA_SERVER="a,b"): one list of
// devices, the first server's then the second's, and each call naming a
// device answered by that device's server. Both servers load the NVML and
// driver test doubles, each double with a UUID of its own.
#include <gtest/gtest.h>
#include <nvml.h>

#include <cstdlib>
#include <string>

#include "server_process.h"

namespace {

constexpr char kFirstUuid[] = "GPU-5c0da000-0000-4000-8000-00000000000a";
constexpr char kSecondUuid[] = "GPU-5c0da000-0000-4000-8000-00000000000b";
constexpr char kSecondBusId[] = "00000000:5E:00.0";

scuda::test::ServerProcess* g_first = nullptr;
scuda::test::ServerProcess* g_second = nullptr;

// Servers start before any client call, so that setenv races no thread.
class TwoServers : public ::testing::Environment {
 public:
  void SetUp() override {
    setenv("NVML_DOUBLE_UUID", kFirstUuid, 1);
    g_first = new scuda::test::ServerProcess({"--nvml", NVML_DOUBLE_LIB});
    setenv("NVML_DOUBLE_UUID", kSecondUuid, 1);
    setenv("NVML_DOUBLE_BUS_ID", kSecondBusId, 1);
    g_second = new scuda::test::ServerProcess({"--nvml", NVML_DOUBLE_LIB});
    unsetenv("NVML_DOUBLE_UUID");
    unsetenv("NVML_DOUBLE_BUS_ID");
    setenv("SCUDA_SERVER", (g_first->address() + "," + g_second->address()).c_str(), 1);
  }
  void TearDown() override {
    delete g_first;
    delete g_second;
  }
};

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new TwoServers);

std::string uuid_of(nvmlDevice_t device) {
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  EXPECT_EQ(nvmlDeviceGetUUID(device, uuid, sizeof uuid), NVML_SUCCESS);
  return uuid;
}

TEST(NvmlServers, EveryServersDevicesAreOneListInTheServersOrder) {
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  unsigned int count = 0;
  ASSERT_EQ(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
  nvmlDevice_t first = nullptr;
  nvmlDevice_t second = nullptr;
  ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(0, &first), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(1, &second), NVML_SUCCESS);
  EXPECT_EQ(uuid_of(first), kFirstUuid);
  EXPECT_EQ(uuid_of(second), kSecondUuid);
  unsigned int index = 9;
  ASSERT_EQ(nvmlDeviceGetIndex(second, &index), NVML_SUCCESS);
  EXPECT_EQ(index, 1u);
  ASSERT_EQ(nvmlDeviceGetIndex(first, &index), NVML_SUCCESS);
  EXPECT_EQ(index, 0u);
  // No server knows both devices: the pair queries whose answer is known
  // (never peers, never one board) are answered here.
  int same_board = -1;
  EXPECT_EQ(nvmlDeviceOnSameBoard(first, second, &same_board), NVML_SUCCESS);
  EXPECT_EQ(same_board, 0);
  nvmlGpuP2PStatus_t p2p = NVML_P2P_STATUS_OK;
  EXPECT_EQ(nvmlDeviceGetP2PStatus(first, second, NVML_P2P_CAPS_INDEX_READ, &p2p), NVML_SUCCESS);
  EXPECT_EQ(p2p, NVML_P2P_STATUS_NOT_SUPPORTED);
  nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_INTERNAL;
  EXPECT_EQ(nvmlDeviceGetTopologyCommonAncestor(first, second, &level), NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_SYSTEM);
  EXPECT_EQ(nvmlDeviceOnSameBoard(second, nullptr, &same_board), NVML_ERROR_INVALID_ARGUMENT);
  // A lookup the first server cannot answer goes on to the second.
  nvmlDevice_t by_bus = nullptr;
  ASSERT_EQ(nvmlDeviceGetHandleByPciBusId_v2(kSecondBusId, &by_bus), NVML_SUCCESS);
  EXPECT_EQ(by_bus, second);
  EXPECT_EQ(nvmlDeviceGetHandleByPciBusId_v2("00000000:99:00.0", &by_bus), NVML_ERROR_NOT_FOUND);
  nvmlDevice_t none = nullptr;
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(2, &none), NVML_ERROR_INVALID_ARGUMENT);
  nvmlMemory_t memory{};
  EXPECT_EQ(nvmlDeviceGetMemoryInfo(second, &memory), NVML_SUCCESS);
  EXPECT_GT(memory.total, 0u);
  ASSERT_EQ(nvmlShutdown(), NVML_SUCCESS);
}

// The last shutdown ends NVML on both servers: the second one's answers
// stop too.
TEST(NvmlServers, TheLastShutdownReachesEveryServer) {
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  nvmlDevice_t first = nullptr;
  nvmlDevice_t second = nullptr;
  ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(0, &first), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(1, &second), NVML_SUCCESS);
  ASSERT_EQ(nvmlShutdown(), NVML_SUCCESS);
  char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
  EXPECT_EQ(nvmlDeviceGetName(second, name, sizeof name), NVML_ERROR_UNINITIALIZED);
  int same_board = -1;
  EXPECT_EQ(nvmlDeviceOnSameBoard(first, second, &same_board), NVML_ERROR_UNINITIALIZED);
}

}  // namespace
