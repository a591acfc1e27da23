// Asynchronous notifications (cuDeviceRegisterAsyncNotification): the
// session registers a stand-in whose data is the client's handle id; each
// notification goes over the callback channel, where the program's
// callback runs.
#include "protocol/ops.h"
#include "server/callbacks/callback_channel.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"
#include "server/session/typed_handler.h"

namespace scuda::server {

namespace {

namespace op = protocol::op;

// The client has opened its callback channel.
CUresult async_notification_register(Session& s, const op::AsyncNotificationRegister::Request& q,
                                     op::AsyncNotificationRegister::Reply* a) {
  const auto device = static_cast<CUdevice>(q.device);
  const uint64_t proposed = q.proposed;
  if (!s.handles().can_bind(proposed)) return CUDA_ERROR_INVALID_VALUE;
  if (!s.driver().cuDeviceRegisterAsyncNotification) return CUDA_ERROR_NOT_SUPPORTED;
  CUasyncCallbackHandle handle = nullptr;
  const CUresult rc = s.driver().cuDeviceRegisterAsyncNotification(
      device, async_notification_reached, reinterpret_cast<void*>(static_cast<uintptr_t>(proposed)),
      &handle);
  if (rc == CUDA_SUCCESS)
    a->handle = s.handles().bind(proposed, HandleKind::CUasyncCallbackHandle, handle);
  return rc;
}

const HandlerEntry kHandlers[] = {
    typed_entry<op::AsyncNotificationRegister, async_notification_register>(),
};

}  // namespace

std::span<const HandlerEntry> async_notification_handlers() { return kHandlers; }

}  // namespace scuda::server
