// NVML numbers only the GPUs a server offers. Both servers run on a host of
// two GPUs (the driver double with SCUDA_DOUBLE_DEVICES=2, the NVML double
// with the same two UUIDs); the first offers only the second GPU
// (CUDA_VISIBLE_DEVICES=1 on its side), the other offers both, the second
// GPU first (CUDA_VISIBLE_DEVICES=1,0). One client given both servers then
// sees three devices: the first server's one, then the second's two, in
// the order the servers' CUDA devices are numbered.
#include <gtest/gtest.h>
#include <nvml.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "common/gpu_uuid.h"
#include "server_process.h"
#include "status_json.h"

namespace {

// The driver double's UUID of its GPU `physical` (tests/double/state.cc).
std::string double_uuid(int physical) {
  CUuuid id;
  std::memcpy(id.bytes, "scuda-test-dbl01", sizeof id.bytes);
  id.bytes[15] = static_cast<char>(id.bytes[15] + physical);
  return scuda::gpu_uuid_text(id);
}

constexpr char kSecondBusId[] = "00000000:3C:00.0";  // the NVML double's second GPU

scuda::test::ServerProcess* g_one = nullptr;
scuda::test::ServerProcess* g_both = nullptr;

// Servers start before any client call, so that setenv races no thread.
class Servers : public ::testing::Environment {
 public:
  void SetUp() override {
    setenv("SCUDA_DOUBLE_DEVICES", "2", 1);
    setenv("NVML_DOUBLE_UUID", (double_uuid(0) + "," + double_uuid(1)).c_str(), 1);
    setenv("CUDA_VISIBLE_DEVICES", "1", 1);
    g_one = new scuda::test::ServerProcess({"--nvml", NVML_DOUBLE_LIB});
    setenv("CUDA_VISIBLE_DEVICES", "1,0", 1);
    g_both = new scuda::test::ServerProcess({"--nvml", NVML_DOUBLE_LIB});
    unsetenv("CUDA_VISIBLE_DEVICES");
    unsetenv("NVML_DOUBLE_UUID");
    unsetenv("SCUDA_DOUBLE_DEVICES");
    setenv("SCUDA_SERVER", (g_one->address() + "," + g_both->address()).c_str(), 1);
  }
  void TearDown() override {
    delete g_one;
    delete g_both;
  }
};

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new Servers);

std::string uuid_of(nvmlDevice_t device) {
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
  EXPECT_EQ(nvmlDeviceGetUUID(device, uuid, sizeof uuid), NVML_SUCCESS);
  return uuid;
}

TEST(NvmlOffered, AServerShowsOnlyTheGpusItOffers) {
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  unsigned int count = 0;
  ASSERT_EQ(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 3u);
  unsigned int legacy_count = 0;
  ASSERT_EQ(nvmlDeviceGetCount(&legacy_count), NVML_SUCCESS);
  EXPECT_EQ(legacy_count, 3u);
  nvmlDevice_t devices[3] = {};
  for (unsigned int i = 0; i < 3; ++i)
    ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(i, &devices[i]), NVML_SUCCESS) << i;
  EXPECT_EQ(uuid_of(devices[0]), double_uuid(1));
  EXPECT_EQ(uuid_of(devices[1]), double_uuid(1));
  EXPECT_EQ(uuid_of(devices[2]), double_uuid(0));
  for (unsigned int i = 0; i < 3; ++i) {
    unsigned int index = 9;
    ASSERT_EQ(nvmlDeviceGetIndex(devices[i], &index), NVML_SUCCESS);
    EXPECT_EQ(index, i);
  }
  nvmlPciInfo_t pci{};
  ASSERT_EQ(nvmlDeviceGetPciInfo_v3(devices[0], &pci), NVML_SUCCESS);
  EXPECT_STREQ(pci.busId, kSecondBusId);
  nvmlDevice_t none = nullptr;
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(3, &none), NVML_ERROR_INVALID_ARGUMENT);
  ASSERT_EQ(nvmlShutdown(), NVML_SUCCESS);
}

// The GPU the first server keeps back is not found there, by bus id or by
// UUID: the lookup goes on to the second server, which offers it.
TEST(NvmlOffered, AGpuTheServerKeepsBackIsNotFoundThere) {
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  nvmlDevice_t by_bus = nullptr;
  ASSERT_EQ(nvmlDeviceGetHandleByPciBusId_v2("00000000:3B:00.0", &by_bus), NVML_SUCCESS);
  unsigned int index = 9;
  ASSERT_EQ(nvmlDeviceGetIndex(by_bus, &index), NVML_SUCCESS);
  EXPECT_EQ(index, 2u);
  EXPECT_EQ(uuid_of(by_bus), double_uuid(0));
  nvmlDevice_t by_uuid = nullptr;
  ASSERT_EQ(nvmlDeviceGetHandleByUUID(double_uuid(0).c_str(), &by_uuid), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceGetIndex(by_uuid, &index), NVML_SUCCESS);
  EXPECT_EQ(index, 2u);
  // The GPU both offer is found on the first.
  ASSERT_EQ(nvmlDeviceGetHandleByUUID(double_uuid(1).c_str(), &by_uuid), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceGetIndex(by_uuid, &index), NVML_SUCCESS);
  EXPECT_EQ(index, 0u);
  ASSERT_EQ(nvmlShutdown(), NVML_SUCCESS);
}

// The server's status, which `--pick least-loaded` and the Kubernetes
// plugin read, counts the GPUs the server offers, as its NVML does.
TEST(NvmlOffered, TheStatusCountsTheGpusTheServerOffers) {
  for (const auto& [server, gpus] : {std::pair{g_one, 1u}, std::pair{g_both, 2u}}) {
    const nlohmann::json j = scuda::test::status_json_when(
        server->address(), [](const auto& j) { return j.value("gpu_source", "") == "NVML"; });
    ASSERT_TRUE(j.is_object()) << server->address();
    EXPECT_EQ(j["gpus"].size(), gpus) << j;
  }
}

}  // namespace
