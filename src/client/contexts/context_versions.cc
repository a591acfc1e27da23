// cuCtxGetApiVersion: fixed when a context is made, so kept per context; and
// kept per device for later runs (answer_cache.h), since a device's contexts
// all report the version of the API that made them, which is this library's.
#include <map>
#include <mutex>
#include <string>

#include "client/modules/answer_cache.h"
#include "client/runtime.h"
#include "client/state.h"
#include "common/lock_order.h"
#include "custom.h"
#include "forward.h"

namespace scuda::client::parts {

struct ContextVersions {
  scuda::RankedMutex mu{scuda::LockRank::kLeaf, "context versions"};
  std::map<CUcontext, unsigned> by_context;
};

}  // namespace scuda::client::parts

namespace {

scuda::client::parts::ContextVersions& versions() {
  return scuda::client::client_state().context_versions.get();
}

std::string lasting_key(CUdevice dev) {
  scuda::protocol::Writer w;
  w.put<int32_t>(dev);
  return scuda::client::answers::key('V', w);
}

}  // namespace

CUresult scuda::client::custom::cuCtxGetApiVersion(CUcontext ctx, unsigned int* version) {
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  if (!ctx && ::cuCtxGetCurrent(&ctx) != CUDA_SUCCESS) return CUDA_ERROR_INVALID_CONTEXT;
  {
    std::lock_guard lock(versions().mu);
    if (auto it = versions().by_context.find(ctx); it != versions().by_context.end()) {
      *version = it->second;
      return CUDA_SUCCESS;
    }
  }
  CUdevice dev = 0;
  const bool has_device = ctx && ::cuCtxGetDevice_v2(&dev, ctx) == CUDA_SUCCESS;
  if (!has_device || !scuda::client::answers::find_value(lasting_key(dev), version)) {
    if (CUresult rc = scuda::client::forward::cuCtxGetApiVersion(ctx, version); rc != CUDA_SUCCESS)
      return rc;
    if (has_device) scuda::client::answers::remember_value(lasting_key(dev), *version);
  }
  std::lock_guard lock(versions().mu);
  versions().by_context[ctx] = *version;
  return CUDA_SUCCESS;
}
