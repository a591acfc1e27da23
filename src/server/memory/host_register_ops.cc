// Registered host memory (cuMemHostRegister): the session mirrors the
// client's range (host_mirrors.h); the client pushes what its host changed
// and pulls what the device changed.
#include <spdlog/spdlog.h>

#include "protocol/frame.h"
#include "protocol/op_layouts.h"
#include "server/memory/live_channel.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"
#include "server/session/typed_handler.h"

namespace scuda::server {

namespace {

namespace op = protocol::op;
using protocol::Reader;
using protocol::Writer;

CUresult host_register(Session& s, const op::HostRegister::Request& q, op::HostRegister::Reply* a) {
  CUdeviceptr device = 0;
  const CUresult rc = s.mirrors().add(s.driver(), q.address, q.size, q.flags, &device);
  a->device = device;
  return rc;
}

CUresult host_unregister(Session& s, const op::HostUnregister::Request& q, protocol::Empty*) {
  return s.mirrors().remove(s.driver(), q.address);
}

CUresult mirror_push(Session& s, const op::MirrorPush::Request& q, protocol::Empty*) {
  return s.mirrors().write(q.address, q.bytes) ? CUDA_SUCCESS
                                               : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

// Replies the window's changed runs (op::MirrorChanges), encoded under the
// mirrors' lock, while the twin they view cannot change.
CUresult mirror_pull(Session& s, Reader& in, Writer& out) {
  op::MirrorPull::Request q;
  if (!protocol::read(in, &q) || q.size > protocol::kChunkSize) return kMalformed;
  return s.mirrors().take_changes(q.address, q.size, out) ? CUDA_SUCCESS
                                                          : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

// No inputs; replies the live mirrors' channel's join point.
CUresult open_live_channel(Session& s, const protocol::Empty&, op::JoinPoint* a) {
  std::string name, secret, error;
  if (!live_channel().open(&s.mirrors(), &name, &secret, &error)) {
    spdlog::error("cannot open the live mirrors' channel: {}", error);
    return CUDA_ERROR_OPERATING_SYSTEM;
  }
  *a = {name, secret};
  return CUDA_SUCCESS;
}

const HandlerEntry kHandlers[] = {
    typed_entry<op::LiveChannel, open_live_channel>(),
    typed_entry<op::HostRegister, host_register>(),
    typed_entry<op::HostUnregister, host_unregister>(),
    typed_entry<op::MirrorPush, mirror_push>(),
    {protocol::kOpMirrorPull, mirror_pull},
};

}  // namespace

std::span<const HandlerEntry> host_register_handlers() { return kHandlers; }

}  // namespace scuda::server
