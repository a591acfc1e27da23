// What the export-table code needs from the rest of the client, reduced to
// fixed answers so its tests run without a server.
#include <cuda.h>

#include <vector>

#include "common/driver_table.h"

namespace scuda::client {
CUresult module_functions(CUmodule, std::vector<CUfunction>*) { return CUDA_ERROR_NOT_INITIALIZED; }
bool passthrough() { return false; }
bool exiting() { return false; }
const DriverTable& local_driver() {
  static DriverTable table;
  return table;
}
CUcontext primary_context(CUdevice) { return nullptr; }
void trace_entry(const char*) {}
namespace stats {
void count_call(const char*) {}
}  // namespace stats
}  // namespace scuda::client

extern "C" {
CUresult CUDAAPI cuModuleLoadData(CUmodule*, const void*) { return CUDA_ERROR_NOT_INITIALIZED; }
CUresult CUDAAPI cuFuncGetName(const char**, CUfunction) { return CUDA_ERROR_NOT_INITIALIZED; }
CUresult CUDAAPI cuCtxGetCurrent(CUcontext* ctx) {
  *ctx = nullptr;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDriverGetVersion(int* v) {
  *v = 13000;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetCount(int* count) {
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice) {
  for (char& b : uuid->bytes) b = 1;
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuDeviceGetAttribute(int* v, CUdevice_attribute, CUdevice) {
  *v = 2;
  return CUDA_SUCCESS;
}
}
