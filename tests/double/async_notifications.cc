// Asynchronous notifications (cuDeviceRegisterAsyncNotification): the
// double's device has a budget of all its memory, and an allocation that
// does not fit tells every registered callback by how much it went over,
// before the allocation fails.
#include <cuda.h>

#include <map>

#include "allocations.h"
#include "state.h"

using namespace scuda_double;

namespace {

struct Callback {
  CUasyncCallback fn;
  void* data;
};

// Registered callbacks by handle.
std::map<CUasyncCallbackHandle, Callback>& callbacks() {
  static auto* m = new std::map<CUasyncCallbackHandle, Callback>;  // never freed: used until exit
  return *m;
}

void notify_over_budget(unsigned long long excess) {
  for (const auto& [handle, cb] : callbacks()) {
    CUasyncNotificationInfo info{};
    info.type = CU_ASYNC_NOTIFICATION_TYPE_OVER_BUDGET;
    info.info.overBudget.bytesOverBudget = excess;
    cb.fn(&info, cb.data, handle);
  }
}

}  // namespace

bool scuda_double::exceeds_memory(size_t size, CUdevice dev) {
  const size_t free = total_memory() - state().used[dev];
  if (size <= free) return false;
  notify_over_budget(size - free);
  return true;
}

extern "C" {

CUresult cuDeviceRegisterAsyncNotification(CUdevice device, CUasyncCallback callbackFunc,
                                           void* userData, CUasyncCallbackHandle* callback) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  if (callbackFunc == nullptr || callback == nullptr) return CUDA_ERROR_INVALID_VALUE;
  static uintptr_t next = 0x7100;
  *callback = reinterpret_cast<CUasyncCallbackHandle>(next++);
  callbacks()[*callback] = {callbackFunc, userData};
  return CUDA_SUCCESS;
}

CUresult cuDeviceUnregisterAsyncNotification(CUdevice device, CUasyncCallbackHandle callback) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (!valid_device(device)) return CUDA_ERROR_INVALID_DEVICE;
  return callbacks().erase(callback) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

}  // extern "C"
