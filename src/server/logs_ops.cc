// The driver's error log: the session's driver dumps it into a buffer here,
// and the lines go to the client (cuLogsDumpToMemory, cuLogsDumpToFile);
// messages for a client's callback go over the callback channel
// (cuLogsRegisterCallback).
#include <vector>

#include "protocol/frame.h"
#include "protocol/ops.h"
#include "server/callback_channel.h"
#include "server/dispatch.h"
#include "server/session.h"

namespace scuda::server {

namespace {

using protocol::Reader;
using protocol::Writer;

// The driver keeps at most 25600 bytes of log; a client may ask for less.
constexpr uint64_t kMaxLogBytes = 64 << 10;

// u8 iterator present, u32 iterator, u64 buffer size, u32 flags ->
// u32 iterator, blob lines.
CUresult logs_dump(Session& s, Reader& in, Writer& out) {
  const bool has_iterator = in.u8() != 0;
  CUlogIterator iterator = in.u32();
  size_t size = in.u64();
  const unsigned flags = in.u32();
  if (!in.done() || size > kMaxLogBytes) return kMalformed;
  if (!s.driver().cuLogsDumpToMemory) return CUDA_ERROR_NOT_SUPPORTED;
  std::vector<char> buffer(size + 1);
  const CUresult rc = s.driver().cuLogsDumpToMemory(has_iterator ? &iterator : nullptr,
                                                    buffer.data(), &size, flags);
  if (rc != CUDA_SUCCESS) return rc;
  out.u32(iterator);
  out.blob(buffer.data(), std::min(size, buffer.size() - 1));
  return CUDA_SUCCESS;
}

// u64 proposed callback handle id -> u64 the handle's id. The client has
// opened its callback channel; each message goes there, to the callback
// registered under the proposed id.
CUresult logs_register(Session& s, Reader& in, Writer& out) {
  const uint64_t proposed = in.u64();
  if (!in.done()) return kMalformed;
  if (!s.handles().can_bind(proposed)) return CUDA_ERROR_INVALID_VALUE;
  if (!s.driver().cuLogsRegisterCallback) return CUDA_ERROR_NOT_SUPPORTED;
  CUlogsCallbackHandle handle = nullptr;
  const CUresult rc = s.driver().cuLogsRegisterCallback(
      log_callback_reached, reinterpret_cast<void*>(static_cast<uintptr_t>(proposed)), &handle);
  if (rc == CUDA_SUCCESS)
    out.u64(s.handles().bind(proposed, HandleKind::CUlogsCallbackHandle, handle));
  return rc;
}

const HandlerEntry kHandlers[] = {
    {protocol::kOpLogsDump, logs_dump},
    {protocol::kOpLogsRegister, logs_register},
};

}  // namespace

std::span<const HandlerEntry> logs_handlers() { return kHandlers; }

}  // namespace scuda::server
