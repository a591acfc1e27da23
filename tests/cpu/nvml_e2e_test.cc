// End to end through NVML: this test program is a client linked against the
// NVML stand-in (and through it the driver stand-in); the server it talks to
// is a real `scuda server` process loading the NVML and driver test doubles.
#include <gtest/gtest.h>
#include <nvml.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "nvml_double.h"
#include "server_process.h"

// pynvml's readers still call deprecated entry points such as
// nvmlDeviceGetTemperature, so the tests do too.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

// Not in nvml.h: nvidia-smi's private-table lookup.
extern "C" nvmlReturn_t nvmlInternalGetExportTable(const void** table, const void* id);
// libcuda.so.1's count of the replies this process waited for.
extern "C" uint64_t scuda_replies_awaited();

namespace {

scuda::test::ServerProcess* g_server = nullptr;

class ServerEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    g_server = new scuda::test::ServerProcess({"--nvml", NVML_DOUBLE_LIB});
    setenv("SCUDA_SERVER", g_server->address().c_str(), 1);
  }
  void TearDown() override { delete g_server; }
};

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new ServerEnvironment);

class NvmlTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
    ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(0, &dev_), NVML_SUCCESS);
  }
  void TearDown() override { EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS); }

  nvmlDevice_t dev_ = nullptr;
};

TEST_F(NvmlTest, DevicesComeFromTheServersNvml) {
  unsigned int count = 0;
  ASSERT_EQ(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  EXPECT_EQ(count, 1u);
  nvmlDevice_t by_bus = nullptr;
  ASSERT_EQ(nvmlDeviceGetHandleByPciBusId_v2(nvml_double::kBusId, &by_bus), NVML_SUCCESS);
  EXPECT_EQ(by_bus, dev_);
  nvmlPciInfo_t pci{};
  ASSERT_EQ(nvmlDeviceGetPciInfo_v3(dev_, &pci), NVML_SUCCESS);
  EXPECT_STREQ(pci.busId, nvml_double::kBusId);
  EXPECT_EQ(pci.pciDeviceId, nvml_double::kPciDeviceId);
}

TEST_F(NvmlTest, NamesAndVersions) {
  char text[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  ASSERT_EQ(nvmlDeviceGetName(dev_, text, sizeof text), NVML_SUCCESS);
  EXPECT_STREQ(text, nvml_double::kName);
  ASSERT_EQ(nvmlDeviceGetUUID(dev_, text, sizeof text), NVML_SUCCESS);
  EXPECT_STREQ(text, nvml_double::kUuid);
  ASSERT_EQ(nvmlSystemGetDriverVersion(text, sizeof text), NVML_SUCCESS);
  EXPECT_STREQ(text, nvml_double::kDriverVersion);
  int cuda = 0;
  ASSERT_EQ(nvmlSystemGetCudaDriverVersion_v2(&cuda), NVML_SUCCESS);
  EXPECT_EQ(cuda, nvml_double::kCudaVersion);
}

TEST_F(NvmlTest, Readings) {
  nvmlMemory_t memory{};
  ASSERT_EQ(nvmlDeviceGetMemoryInfo(dev_, &memory), NVML_SUCCESS);
  EXPECT_EQ(memory.total, nvml_double::kMemoryTotal);
  EXPECT_EQ(memory.used, nvml_double::kMemoryUsed);
  nvmlUtilization_t util{};
  ASSERT_EQ(nvmlDeviceGetUtilizationRates(dev_, &util), NVML_SUCCESS);
  EXPECT_EQ(util.gpu, nvml_double::kGpuUtilization);
  EXPECT_EQ(util.memory, nvml_double::kMemoryUtilization);
  unsigned int value = 0;
  ASSERT_EQ(nvmlDeviceGetTemperature(dev_, NVML_TEMPERATURE_GPU, &value), NVML_SUCCESS);
  EXPECT_EQ(value, nvml_double::kTemperature);
  ASSERT_EQ(nvmlDeviceGetPowerUsage(dev_, &value), NVML_SUCCESS);
  EXPECT_EQ(value, nvml_double::kPowerMilliwatts);
  ASSERT_EQ(nvmlDeviceGetClockInfo(dev_, NVML_CLOCK_SM, &value), NVML_SUCCESS);
  EXPECT_EQ(value, nvml_double::kGraphicsClock);
  ASSERT_EQ(nvmlDeviceGetClockInfo(dev_, NVML_CLOCK_MEM, &value), NVML_SUCCESS);
  EXPECT_EQ(value, nvml_double::kMemoryClock);
}

TEST_F(NvmlTest, ProcessListShowsOnlyThisSession) {
  unsigned int count = 0;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(dev_, &count, nullptr),
            NVML_ERROR_INSUFFICIENT_SIZE);
  ASSERT_EQ(count, 1u);
  nvmlProcessInfo_t infos[4]{};
  count = 4;
  ASSERT_EQ(nvmlDeviceGetComputeRunningProcesses_v3(dev_, &count, infos), NVML_SUCCESS);
  ASSERT_EQ(count, 1u);
  EXPECT_NE(infos[0].pid, nvml_double::kOtherTenantPid);
  EXPECT_EQ(infos[0].usedGpuMemory, nvml_double::kProcessMemory);
}

TEST_F(NvmlTest, BadInputGivesNvmlErrors) {
  EXPECT_EQ(nvmlDeviceGetCount_v2(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  nvmlMemory_t memory{};
  EXPECT_EQ(nvmlDeviceGetMemoryInfo(dev_, nullptr), NVML_ERROR_INVALID_ARGUMENT);
  auto* unknown = reinterpret_cast<nvmlDevice_t>(uintptr_t{0x7777000});
  EXPECT_EQ(nvmlDeviceGetMemoryInfo(unknown, &memory), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(nvmlDeviceGetMemoryInfo(nullptr, &memory), NVML_ERROR_INVALID_ARGUMENT);
  char tiny[4];
  EXPECT_EQ(nvmlDeviceGetName(dev_, tiny, sizeof tiny), NVML_ERROR_INSUFFICIENT_SIZE);
  nvmlDevice_t none = nullptr;
  EXPECT_EQ(nvmlDeviceGetHandleByIndex_v2(7, &none), NVML_ERROR_INVALID_ARGUMENT);
}

// PyTorch's device_count() calls nvmlInit and nvmlDeviceGetCount_v2 each
// time: nested inits and answers that cannot change cost no round trip.
TEST_F(NvmlTest, NestedInitsAndFixedAnswersAreAnsweredLocally) {
  const uint64_t before = scuda_replies_awaited();
  unsigned int count = 0;
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
    ASSERT_EQ(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
    EXPECT_EQ(count, 1u);
  }
  nvmlDevice_t again = nullptr;
  ASSERT_EQ(nvmlDeviceGetHandleByIndex_v2(0, &again), NVML_SUCCESS);  // the fixture asked
  EXPECT_EQ(again, dev_);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(nvmlShutdown(), NVML_SUCCESS);
  // The fixture's lookup of device 0 asked for the count, which was kept.
  EXPECT_EQ(scuda_replies_awaited() - before, 0u);
  // The fixture's init still holds: the server answers what may change.
  nvmlMemory_t memory{};
  EXPECT_EQ(nvmlDeviceGetMemoryInfo(dev_, &memory), NVML_SUCCESS);
  EXPECT_EQ(scuda_replies_awaited() - before, 1u);
}

// The last shutdown reaches the server, and what was kept is forgotten.
TEST(NvmlLifetime, TheLastShutdownEndsNvmlOnTheServer) {
  unsigned int count = 0;
  ASSERT_EQ(nvmlInit_v2(), NVML_SUCCESS);
  ASSERT_EQ(nvmlDeviceGetCount_v2(&count), NVML_SUCCESS);
  ASSERT_EQ(nvmlShutdown(), NVML_SUCCESS);
  EXPECT_EQ(nvmlDeviceGetCount_v2(&count), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(NvmlTest, UnsupportedAndMissingCallsSaySo) {
  unsigned int count = 0;
  EXPECT_EQ(nvmlDeviceGetProcessUtilization(dev_, nullptr, &count, 0), NVML_ERROR_NOT_SUPPORTED);
  unsigned int speed = 0;
  EXPECT_EQ(nvmlDeviceGetFanSpeed(dev_, &speed), NVML_ERROR_FUNCTION_NOT_FOUND);
}

TEST(NvmlLocal, ErrorStringsAndExportTable) {
  EXPECT_STRNE(nvmlErrorString(NVML_ERROR_INSUFFICIENT_SIZE), "Unknown Error");
  EXPECT_STREQ(nvmlErrorString(static_cast<nvmlReturn_t>(12345)), "Unknown Error");
  const unsigned char smi[16] = {0xc4, 0xfe, 0x3e, 0x6c, 0xc9, 0x8f, 0x6c, 0x4e,
                                 0xa3, 0x27, 0xee, 0x69, 0x6e, 0x12, 0xf7, 0xc4};
  const unsigned char other[16] = {};
  const void* table = nullptr;
  EXPECT_EQ(nvmlInternalGetExportTable(&table, smi), NVML_SUCCESS);
  EXPECT_NE(table, nullptr);
  EXPECT_EQ(nvmlInternalGetExportTable(&table, other), NVML_ERROR_INVALID_ARGUMENT);
}

}  // namespace
