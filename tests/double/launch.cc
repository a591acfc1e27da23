// cuLaunchKernel / cuLaunchKernelEx: validate, record, run built-ins (or, on
// a capturing stream, add a kernel node).
#include <cuda.h>

#include "builtins.h"
#include "functions.h"
#include "launch_log.h"
#include "packing.h"
#include "state.h"
#include "work.h"

using namespace scuda_double;

namespace {

constexpr unsigned long long kMaxThreadsPerBlock = 1024;

bool valid_shape(const LaunchRecord& r) {
  for (int i = 0; i < 3; ++i) {
    if (r.grid[i] == 0 || r.block[i] == 0) return false;
  }
  unsigned long long threads = 1ull * r.block[0] * r.block[1] * r.block[2];
  return threads <= kMaxThreadsPerBlock;
}

// A bad address breaks the context for good, as a GPU fault does.
CUresult launch(LaunchRecord record, CUstream stream, CUfunction f, void** params, void** extra) {
  Call call = begin_on_stream(stream);
  if (call.status != CUDA_SUCCESS) return call.status;
  const KernelDesc* kernel = resolve_function(f);
  if (kernel == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  if (!valid_shape(record)) return CUDA_ERROR_INVALID_VALUE;
  CUresult packed = pack_params(*kernel, params, extra, &record.params);
  if (packed != CUDA_SUCCESS) return packed;
  Work work;
  work.type = CU_GRAPH_NODE_TYPE_KERNEL;
  work.func = f;
  work.launch = std::move(record);
  CUresult result = submit(stream, work);
  if (result == CUDA_ERROR_ILLEGAL_ADDRESS) call.ctx->sticky = result;
  return result;
}

}  // namespace

CUresult scuda_double::run_kernel(const Work& work) {
  const KernelDesc* kernel = resolve_function(work.func);
  if (kernel == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  LaunchRecord record = work.launch;
  record.name = kernel->name;
  log_launch(record);
  return run_builtin(*kernel, record.params);
}

extern "C" {

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void** kernelParams, void** extra) {
  LaunchRecord record{
      "", {gridDimX, gridDimY, gridDimZ}, {blockDimX, blockDimY, blockDimZ}, sharedMemBytes, {}};
  return launch(std::move(record), hStream, f, kernelParams, extra);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** kernelParams,
                          void** extra) {
  if (config == nullptr) {
    Call call = begin();
    return call.status != CUDA_SUCCESS ? call.status : CUDA_ERROR_INVALID_VALUE;
  }
  LaunchRecord record{"",
                      {config->gridDimX, config->gridDimY, config->gridDimZ},
                      {config->blockDimX, config->blockDimY, config->blockDimZ},
                      config->sharedMemBytes,
                      {}};
  for (unsigned i = 0; i < config->numAttrs; ++i)
    if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE)
      record.cooperative = config->attrs[i].value.cooperative != 0;
  return launch(std::move(record), config->hStream, f, kernelParams, extra);
}

}  // extern "C"
