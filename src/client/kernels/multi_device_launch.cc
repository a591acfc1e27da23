// cuLaunchCooperativeKernelMultiDevice, deprecated: CUDA 13's cooperative
// groups have no multi-grid group, so no kernel can wait for the other
// devices' grids, and the launch is each entry's cooperative launch on its
// stream. What the call adds is the order around them: unless the flags
// say otherwise, no kernel starts before all the streams' earlier work,
// and no later work on any of the streams starts before all the kernels.
#include <cuda.h>

#include <set>
#include <vector>

#include "client/runtime.h"
#include "custom.h"

namespace {

constexpr unsigned kKnownFlags = CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_PRE_LAUNCH_SYNC |
                                 CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_POST_LAUNCH_SYNC;

// The device of each entry's stream; false when one is unusable or two
// entries share a device, which the driver refuses.
bool one_per_device(const CUDA_LAUNCH_PARAMS* list, unsigned n) {
  std::set<CUdevice> seen;
  for (unsigned i = 0; i < n; ++i) {
    CUcontext ctx = nullptr;
    CUdevice dev = 0;
    if (!list[i].function || cuStreamGetCtx(list[i].hStream, &ctx) != CUDA_SUCCESS ||
        cuCtxPushCurrent(ctx) != CUDA_SUCCESS)
      return false;
    const CUresult rc = cuCtxGetDevice(&dev);
    cuCtxPopCurrent(&ctx);
    if (rc != CUDA_SUCCESS || !seen.insert(dev).second) return false;
  }
  return true;
}

// Every stream waits for what every stream has been given so far.
CUresult join_streams(const CUDA_LAUNCH_PARAMS* list, unsigned n) {
  std::vector<CUevent> events(n);
  CUresult rc = CUDA_SUCCESS;
  for (unsigned i = 0; i < n && rc == CUDA_SUCCESS; ++i) {
    CUcontext ctx = nullptr;
    rc = cuStreamGetCtx(list[i].hStream, &ctx);
    if (rc == CUDA_SUCCESS) rc = cuCtxPushCurrent(ctx);
    if (rc != CUDA_SUCCESS) break;
    rc = cuEventCreate(&events[i], CU_EVENT_DISABLE_TIMING);
    if (rc == CUDA_SUCCESS) rc = cuEventRecord(events[i], list[i].hStream);
    cuCtxPopCurrent(&ctx);
  }
  for (unsigned i = 0; i < n && rc == CUDA_SUCCESS; ++i)
    for (unsigned j = 0; j < n && rc == CUDA_SUCCESS; ++j)
      if (i != j) rc = cuStreamWaitEvent(list[j].hStream, events[i], 0);
  for (CUevent e : events)
    if (e) cuEventDestroy(e);
  return rc;
}

CUresult launch_multi_device(CUDA_LAUNCH_PARAMS* list, unsigned n, unsigned flags) {
  if (!list || n == 0 || (flags & ~kKnownFlags) || !one_per_device(list, n))
    return CUDA_ERROR_INVALID_VALUE;
  if (!(flags & CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_PRE_LAUNCH_SYNC))
    if (CUresult rc = join_streams(list, n); rc != CUDA_SUCCESS) return rc;
  for (unsigned i = 0; i < n; ++i) {
    const CUDA_LAUNCH_PARAMS& p = list[i];
    if (CUresult rc = cuLaunchCooperativeKernel(p.function, p.gridDimX, p.gridDimY, p.gridDimZ,
                                                p.blockDimX, p.blockDimY, p.blockDimZ,
                                                p.sharedMemBytes, p.hStream, p.kernelParams);
        rc != CUDA_SUCCESS)
      return rc;
  }
  if (!(flags & CUDA_COOPERATIVE_LAUNCH_MULTI_DEVICE_NO_POST_LAUNCH_SYNC))
    return join_streams(list, n);
  return CUDA_SUCCESS;
}

}  // namespace

CUresult scuda::client::custom::cuLaunchCooperativeKernelMultiDevice(CUDA_LAUNCH_PARAMS* list,
                                                                     unsigned int n,
                                                                     unsigned int flags) {
  return launch_multi_device(list, n, flags);
}
