// Host callbacks: the stream gets a stand-in host function that waits, on
// the driver's thread, until the client has run the callback over the
// callback channel (callback_channel.h).
#include <spdlog/spdlog.h>

#include "protocol/ops.h"
#include "server/callback_channel.h"
#include "server/dispatch.h"
#include "server/session.h"

namespace scuda::server {

namespace {

// u64 stream id, u8 mode, u64 callback id; one-way.
CUresult host_callback(Session& s, protocol::Reader& in, protocol::Writer&) {
  const uint64_t stream_id = in.u64();
  const bool per_thread = in.u8() & protocol::kCopyPerThread;
  const uint64_t id = in.u64();
  if (!in.done()) return kMalformed;
  void* stream = nullptr;
  if (!s.handles().resolve(stream_id, HandleKind::CUstream, &stream)) return CUDA_ERROR_INVALID_HANDLE;
  const DriverTable& d = s.driver();
  auto launch = per_thread ? d.cuLaunchHostFunc_ptsz : d.cuLaunchHostFunc;
  if (!launch) return CUDA_ERROR_NOT_SUPPORTED;
  return launch(static_cast<CUstream>(stream), host_function_reached,
                reinterpret_cast<void*>(uintptr_t{id}));
}

// No inputs; replies string name, string secret: what the client's join
// of the callback channel must carry.
CUresult open_channel(Session& s, protocol::Reader& in, protocol::Writer& out) {
  if (!in.done()) return kMalformed;
  callback_channel().set_mirrors(&s.mirrors());
  std::string name, secret, error;
  if (!callback_channel().open(&name, &secret, &error)) {
    spdlog::error("cannot open a callback channel: {}", error);
    return CUDA_ERROR_OPERATING_SYSTEM;
  }
  out.str(name);
  out.str(secret);
  return CUDA_SUCCESS;
}

const HandlerEntry kHandlers[] = {
    {protocol::kOpHostCallback, host_callback, "host-callback"},
    {protocol::kOpCallbackChannel, open_channel, "callback-channel"},
};

}  // namespace

std::span<const HandlerEntry> host_callback_handlers() { return kHandlers; }

}  // namespace scuda::server
