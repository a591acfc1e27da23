// Primary and regular contexts plus the per-thread current-context stack.
#include <cuda.h>
#include <cudaProfiler.h>

#include <memory>

#include "current.h"
#include "launch_log.h"
#include "state.h"

using namespace scuda_double;

namespace {

constexpr unsigned kKnownCtxFlags = 0xFF;  // sched bits, MAP_HOST, LMEM, coredump, SYNC_MEMOPS

Call begin_primary(CUdevice dev, Context** primary) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call;
  if (!valid_device(dev)) {
    call.status = CUDA_ERROR_INVALID_DEVICE;
    return call;
  }
  *primary = state().contexts.find(state().primary[dev]);
  return call;
}

// Resources die with the context; a later retain starts clean.
void deactivate_primary(Context* primary) {
  release_context_resources(state().primary[primary->device]);
  primary->refcount = 0;
  primary->sticky = CUDA_SUCCESS;
}

}  // namespace

extern "C" {

CUresult cuDevicePrimaryCtxRetain(CUcontext* pctx, CUdevice dev) {
  Context* primary = nullptr;
  Call call = begin_primary(dev, &primary);
  if (call.status != CUDA_SUCCESS) return call.status;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (primary->refcount++ == 0) log_line("primary context activated");
  *pctx = as_handle<CUcontext>(state().primary[dev]);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  Context* primary = nullptr;
  Call call = begin_primary(dev, &primary);
  if (call.status != CUDA_SUCCESS) return call.status;
  if (primary->refcount == 0) return CUDA_ERROR_INVALID_CONTEXT;
  if (--primary->refcount == 0) deactivate_primary(primary);
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev) {
  Context* primary = nullptr;
  Call call = begin_primary(dev, &primary);
  if (call.status != CUDA_SUCCESS) return call.status;
  deactivate_primary(primary);
  primary->flags = 0;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int* flags, int* active) {
  Context* primary = nullptr;
  Call call = begin_primary(dev, &primary);
  if (call.status != CUDA_SUCCESS) return call.status;
  if (flags == nullptr || active == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *flags = primary->flags;
  *active = primary->refcount > 0 ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags) {
  Context* primary = nullptr;
  Call call = begin_primary(dev, &primary);
  if (call.status != CUDA_SUCCESS) return call.status;
  if ((flags & ~kKnownCtxFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  primary->flags = flags;
  return CUDA_SUCCESS;
}

// As the driver checks them: exactly one of the two lists, and an SM count
// between 1 and the device's (kDoubleSmCount); CIG needs a graphics API.
CUresult read_create_params(const CUctxCreateParams* params, unsigned* sm_count) {
  if (params == nullptr) return CUDA_SUCCESS;
  if (params->cigParams != nullptr) return CUDA_ERROR_NOT_SUPPORTED;
  if (params->numExecAffinityParams < 0) return CUDA_ERROR_INVALID_VALUE;
  for (int i = 0; params->execAffinityParams && i < params->numExecAffinityParams; ++i) {
    const CUexecAffinityParam& p = params->execAffinityParams[i];
    if (p.type != CU_EXEC_AFFINITY_TYPE_SM_COUNT) return CUDA_ERROR_INVALID_VALUE;
    if (p.param.smCount.val == 0 || p.param.smCount.val > kDoubleSmCount)
      return CUDA_ERROR_INVALID_VALUE;
    *sm_count = p.param.smCount.val;
  }
  return CUDA_SUCCESS;
}

CUresult cuCtxCreate_v4(CUcontext* pctx, CUctxCreateParams* params, unsigned int flags,
                        CUdevice dev) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (pctx == nullptr || (flags & ~kKnownCtxFlags) != 0) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  unsigned sm_count = 0;
  if (CUresult rc = read_create_params(params, &sm_count); rc != CUDA_SUCCESS) return rc;
  auto ctx = std::make_unique<Context>();
  ctx->sm_count = sm_count;
  ctx->device = dev;
  ctx->flags = flags;
  uintptr_t id = state().contexts.add(std::move(ctx));
  push_context(id);
  *pctx = as_handle<CUcontext>(id);
  return CUDA_SUCCESS;
}

CUresult cuCtxDestroy_v2(CUcontext ctx) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  Context* context = state().contexts.find(ctx);
  if (context == nullptr || context->primary) return CUDA_ERROR_INVALID_CONTEXT;
  uintptr_t id = reinterpret_cast<uintptr_t>(ctx);
  release_context_resources(id);
  state().contexts.erase(id);
  forget_context(id);
  return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  uintptr_t id = reinterpret_cast<uintptr_t>(ctx);
  // An inactive primary context may be made current, as on the real driver;
  // calls that need it fail until it is retained.
  if (id != 0 && state().contexts.find(id) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  replace_current(id);
  return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext* pctx) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *pctx = as_handle<CUcontext>(current_context());
  return CUDA_SUCCESS;
}

CUresult cuCtxPushCurrent_v2(CUcontext ctx) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  uintptr_t id = reinterpret_cast<uintptr_t>(ctx);
  if (usable_context(id) == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  push_context(id);
  return CUDA_SUCCESS;
}

CUresult cuCtxPopCurrent_v2(CUcontext* pctx) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (current_context() == 0) return CUDA_ERROR_INVALID_CONTEXT;
  uintptr_t id = pop_context();
  if (pctx != nullptr) *pctx = as_handle<CUcontext>(id);
  return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice* device) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (device == nullptr) return CUDA_ERROR_INVALID_VALUE;
  *device = call.ctx->device;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetExecAffinity(CUexecAffinityParam* affinity, CUexecAffinityType type) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (!affinity || type != CU_EXEC_AFFINITY_TYPE_SM_COUNT) return CUDA_ERROR_INVALID_VALUE;
  affinity->type = type;
  affinity->param.smCount.val = call.ctx->sm_count ? call.ctx->sm_count : kDoubleSmCount;
  return CUDA_SUCCESS;
}

// Every context reports the version of the API that made it: the v2 one.
CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  Call call = ctx ? begin() : begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (ctx && !state().contexts.find(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = 3020;
  return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void) {
  Call call = begin_in_context();
  if (call.status == CUDA_SUCCESS) log_synchronize();
  return call.status;
}

// Stack sizes are rounded up to 16 bytes, as the driver rounds them.
CUresult cuCtxSetLimit(CUlimit limit, size_t value) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (limit < CU_LIMIT_STACK_SIZE || limit > CU_LIMIT_MAX_L2_FETCH_GRANULARITY)
    return CUDA_ERROR_INVALID_VALUE;
  call.ctx->limits[limit] = limit == CU_LIMIT_STACK_SIZE ? (value + 15) / 16 * 16 : value;
  return CUDA_SUCCESS;
}

CUresult cuCtxGetLimit(size_t* value, CUlimit limit) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (!value || limit < CU_LIMIT_STACK_SIZE || limit > CU_LIMIT_MAX_L2_FETCH_GRANULARITY)
    return CUDA_ERROR_INVALID_VALUE;
  auto it = call.ctx->limits.find(limit);
  *value = it != call.ctx->limits.end() ? it->second : 1024;
  return CUDA_SUCCESS;
}

// The profiler's ranges, logged so a test can see they reached the driver.
CUresult cuProfilerStart(void) {
  Call call = begin_in_context();
  if (call.status == CUDA_SUCCESS) log_line("profiler start");
  return call.status;
}

CUresult cuProfilerStop(void) {
  Call call = begin_in_context();
  if (call.status == CUDA_SUCCESS) log_line("profiler stop");
  return call.status;
}

}  // extern "C"
