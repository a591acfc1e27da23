#include "client/contexts/async_notifications.h"

#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "client/op_calls.h"
#include "client/runtime.h"
#include "client/state.h"
#include "client/transport/callback_channel.h"
#include "common/lock_order.h"
#include "custom.h"
#include "forward.h"
#include "protocol/ops.h"

namespace scuda::client::parts {

struct AsyncNotifications {
  scuda::RankedMutex mu{scuda::LockRank::kLeaf, "async notifications"};
  std::map<uint64_t, std::pair<CUasyncCallback, void*>> by_id;
};

}  // namespace scuda::client::parts

namespace {

using scuda::client::parts::AsyncNotifications;

AsyncNotifications& notifications() {
  return scuda::client::client_state().async_notifications.get();
}

void forget(uint64_t id) {
  std::lock_guard lock(notifications().mu);
  notifications().by_id.erase(id);
}

// u32 device, u64 proposed handle id -> u64 the handle's id. The callback
// is known here before the request, since the driver may notify at once.
CUresult register_callback(CUdevice device, CUasyncCallback fn, void* data,
                           CUasyncCallbackHandle* out) {
  if (!fn || !out) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = scuda::client::open_callback_channel(); rc != CUDA_SUCCESS) return rc;
  const uint64_t id = scuda::client::new_handle_id();
  {
    std::lock_guard lock(notifications().mu);
    notifications().by_id[id] = {fn, data};
  }
  using Register = scuda::protocol::op::AsyncNotificationRegister;
  Register::Reply reply;
  CUresult rc = scuda::client::ask<Register>({static_cast<uint32_t>(device), id}, &reply);
  if (rc == CUDA_SUCCESS && reply.handle != id)
    rc = scuda::client::bad_reply("cuDeviceRegisterAsyncNotification");
  if (rc != CUDA_SUCCESS) {
    forget(id);
    return rc;
  }
  *out = scuda::client::handle_from_id<CUasyncCallbackHandle>(id);
  return CUDA_SUCCESS;
}

}  // namespace

namespace scuda::client {

bool run_async_notification(uint64_t id, const CUasyncNotificationInfo& info) {
  std::pair<CUasyncCallback, void*> callback;
  {
    std::lock_guard lock(notifications().mu);
    auto it = notifications().by_id.find(id);
    if (it == notifications().by_id.end()) return false;
    callback = it->second;
  }
  CUasyncNotificationInfo copy = info;  // the callback gets a writable struct
  callback.first(&copy, callback.second, handle_from_id<CUasyncCallbackHandle>(id));
  return true;
}

}  // namespace scuda::client

CUresult scuda::client::custom::cuDeviceRegisterAsyncNotification(CUdevice device,
                                                                  CUasyncCallback callbackFunc,
                                                                  void* userData,
                                                                  CUasyncCallbackHandle* callback) {
  return register_callback(device, callbackFunc, userData, callback);
}

// Once the driver has dropped the stand-in, no notification names the id.
CUresult scuda::client::custom::cuDeviceUnregisterAsyncNotification(
    CUdevice device, CUasyncCallbackHandle callback) {
  const CUresult rc = scuda::client::forward::cuDeviceUnregisterAsyncNotification(device, callback);
  if (rc == CUDA_SUCCESS) forget(scuda::client::handle_id(callback));
  return rc;
}
