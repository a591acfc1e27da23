// cuModuleGetLoadingMode: the server's driver fixes its mode (from
// CUDA_MODULE_LOADING) when it starts, so the first answer serves the
// process; cudart and PyTorch ask at each library load.
#include <mutex>

#include "client/runtime.h"
#include "common/lock_order.h"
#include "custom.h"
#include "forward.h"

CUresult scuda::client::custom::cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  if (!mode) return CUDA_ERROR_INVALID_VALUE;
  static scuda::RankedMutex mu{scuda::LockRank::kRoundTrip, "loading mode"};
  static bool known = false;
  static CUmoduleLoadingMode kept;
  std::lock_guard lock(mu);
  if (!known) {
    const CUresult rc = scuda::client::forward::cuModuleGetLoadingMode(&kept);
    if (rc != CUDA_SUCCESS) return rc;
    known = true;
  }
  *mode = kept;
  return CUDA_SUCCESS;
}
