// The fake GPU's facts, shared by the NVML double and the tests that check
// what comes back through scuda.
#pragma once

#include <nvml.h>

namespace nvml_double {

constexpr char kName[] = "scuda NVML double";
constexpr char kUuid[] = "GPU-5c0da000-0000-4000-8000-000000000001";
constexpr char kBusId[] = "00000000:3B:00.0";
constexpr unsigned int kPciDeviceId = 0x233010de;
constexpr char kDriverVersion[] = "580.00.01";
constexpr int kCudaVersion = 13000;
constexpr unsigned long long kMemoryTotal = 80ull << 30;
constexpr unsigned long long kMemoryUsed = 1ull << 30;
constexpr unsigned int kGpuUtilization = 42;
constexpr unsigned int kMemoryUtilization = 17;
constexpr unsigned int kTemperature = 51;
constexpr unsigned int kPowerMilliwatts = 123456;
constexpr unsigned int kGraphicsClock = 1755;
constexpr unsigned int kMemoryClock = 2619;
constexpr unsigned long long kProcessMemory = 512ull << 20;
constexpr unsigned int kOtherTenantPid = 999999;

}  // namespace nvml_double
