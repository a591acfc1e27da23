// Asynchronous notifications (cuDeviceRegisterAsyncNotification): the
// session registers a stand-in whose data is the client's handle id; each
// notification goes over the callback channel, where the program's
// callback runs.
#include "protocol/ops.h"
#include "server/callback_channel.h"
#include "server/dispatch.h"
#include "server/session.h"

namespace scuda::server {

namespace {

using protocol::Reader;
using protocol::Writer;

// u32 device, u64 proposed callback handle id -> u64 the handle's id. The
// client has opened its callback channel.
CUresult async_notification_register(Session& s, Reader& in, Writer& out) {
  const auto device = static_cast<CUdevice>(in.u32());
  const uint64_t proposed = in.u64();
  if (!in.done()) return kMalformed;
  if (!s.handles().can_bind(proposed)) return CUDA_ERROR_INVALID_VALUE;
  if (!s.driver().cuDeviceRegisterAsyncNotification) return CUDA_ERROR_NOT_SUPPORTED;
  CUasyncCallbackHandle handle = nullptr;
  const CUresult rc = s.driver().cuDeviceRegisterAsyncNotification(
      device, async_notification_reached, reinterpret_cast<void*>(static_cast<uintptr_t>(proposed)),
      &handle);
  if (rc == CUDA_SUCCESS)
    out.u64(s.handles().bind(proposed, HandleKind::CUasyncCallbackHandle, handle));
  return rc;
}

const HandlerEntry kHandlers[] = {
    {protocol::kOpAsyncNotificationRegister, async_notification_register},
};

}  // namespace

std::span<const HandlerEntry> async_notification_handlers() { return kHandlers; }

}  // namespace scuda::server
