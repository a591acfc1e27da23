// Host callbacks: the stream gets a stand-in host function that waits, on
// the driver's thread, until the client has run the callback over the
// callback channel (callback_channel.h).
#include <spdlog/spdlog.h>

#include "protocol/ops.h"
#include "server/callbacks/callback_channel.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"
#include "server/session/typed_handler.h"

namespace scuda::server {

namespace {

// One-way.
CUresult host_callback(Session& s, const protocol::op::HostCallback::Request& q, protocol::Empty*) {
  void* stream = nullptr;
  if (!s.handles().resolve(q.stream, HandleKind::CUstream, &stream))
    return CUDA_ERROR_INVALID_HANDLE;
  const DriverTable& d = s.driver();
  auto launch = q.mode & protocol::kCopyPerThread ? d.cuLaunchHostFunc_ptsz : d.cuLaunchHostFunc;
  if (!launch) return CUDA_ERROR_NOT_SUPPORTED;
  return launch(static_cast<CUstream>(stream), host_function_reached,
                reinterpret_cast<void*>(uintptr_t{q.callback}));
}

// No inputs; replies string name, string secret: what the client's join
// of the callback channel must carry.
CUresult open_channel(Session& s, const protocol::Empty&, protocol::op::JoinPoint* a) {
  callback_channel().set_mirrors(&s.mirrors());
  std::string name, secret, error;
  if (!callback_channel().open(&name, &secret, &error)) {
    spdlog::error("cannot open a callback channel: {}", error);
    return CUDA_ERROR_OPERATING_SYSTEM;
  }
  *a = {name, secret};
  return CUDA_SUCCESS;
}

// Its destructor is the stand-in, which has the client run the program's
// destructor over the callback channel.
CUresult user_object_create(Session& s, const protocol::op::UserObjectCreate::Request& q,
                            protocol::op::UserObjectCreate::Reply* a) {
  const uint64_t proposed = q.proposed;
  if (!s.handles().can_bind(proposed)) return CUDA_ERROR_INVALID_VALUE;
  const DriverTable& d = s.driver();
  if (!d.cuUserObjectCreate) return CUDA_ERROR_NOT_SUPPORTED;
  CUuserObject object = nullptr;
  const CUresult rc = d.cuUserObjectCreate(&object, reinterpret_cast<void*>(uintptr_t{q.callback}),
                                           host_function_reached, q.references, q.flags);
  if (rc == CUDA_SUCCESS) a->object = s.handles().bind(proposed, HandleKind::CUuserObject, object);
  return rc;
}

const HandlerEntry kHandlers[] = {
    typed_entry<protocol::op::HostCallback, host_callback>(),
    typed_entry<protocol::op::UserObjectCreate, user_object_create>(),
    typed_entry<protocol::op::CallbackChannel, open_channel>(),
};

}  // namespace

std::span<const HandlerEntry> host_callback_handlers() { return kHandlers; }

}  // namespace scuda::server
