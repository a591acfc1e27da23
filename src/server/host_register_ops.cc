// Registered host memory (cuMemHostRegister): the session mirrors the
// client's range (host_mirrors.h); the client pushes what its host changed
// and pulls what the device changed.
#include "protocol/frame.h"
#include "protocol/ops.h"
#include "server/dispatch.h"
#include "server/session.h"

namespace scuda::server {

namespace {

using protocol::Reader;
using protocol::Writer;

// u64 address, u64 size, u32 flags -> u64 device address.
CUresult host_register(Session& s, Reader& in, Writer& out) {
  const uint64_t address = in.u64();
  const uint64_t size = in.u64();
  const uint32_t flags = in.u32();
  if (!in.done()) return kMalformed;
  CUdeviceptr device = 0;
  const CUresult rc = s.mirrors().add(s.driver(), address, size, flags, &device);
  if (rc == CUDA_SUCCESS) out.u64(device);
  return rc;
}

// u64 address.
CUresult host_unregister(Session& s, Reader& in, Writer&) {
  const uint64_t address = in.u64();
  if (!in.done()) return kMalformed;
  return s.mirrors().remove(s.driver(), address);
}

// u64 address, blob; one-way.
CUresult mirror_push(Session& s, Reader& in, Writer&) {
  const uint64_t address = in.u64();
  const std::string_view bytes = in.blob();
  if (!in.done()) return kMalformed;
  return s.mirrors().write(address, bytes) ? CUDA_SUCCESS : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

// u64 address, u64 size -> (u64 address, blob) for each changed run.
CUresult mirror_pull(Session& s, Reader& in, Writer& out) {
  const uint64_t address = in.u64();
  const uint64_t size = in.u64();
  if (!in.done() || size > protocol::kChunkSize) return kMalformed;
  return s.mirrors().take_changes(address, size, out) ? CUDA_SUCCESS
                                                      : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}

const HandlerEntry kHandlers[] = {
    {protocol::kOpHostRegister, host_register},
    {protocol::kOpHostUnregister, host_unregister},
    {protocol::kOpMirrorPush, mirror_push},
    {protocol::kOpMirrorPull, mirror_pull},
};

}  // namespace

std::span<const HandlerEntry> host_register_handlers() { return kHandlers; }

}  // namespace scuda::server
