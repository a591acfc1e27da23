// The driver's error log: the session's driver dumps it into a buffer here,
// and the lines go to the client (cuLogsDumpToMemory, cuLogsDumpToFile);
// messages for a client's callback go over the callback channel
// (cuLogsRegisterCallback).
#include <vector>

#include "protocol/frame.h"
#include "protocol/ops.h"
#include "server/callbacks/callback_channel.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"
#include "server/session/typed_handler.h"

namespace scuda::server {

namespace {

namespace op = protocol::op;

// The driver keeps at most 25600 bytes of log; a client may ask for less.
constexpr uint64_t kMaxLogBytes = 64 << 10;

CUresult logs_dump(Session& s, const op::LogsDump::Request& q, op::LogsDump::Reply* a) {
  CUlogIterator iterator = q.iterator;
  size_t size = q.capacity;
  if (size > kMaxLogBytes) return kMalformed;
  if (!s.driver().cuLogsDumpToMemory) return CUDA_ERROR_NOT_SUPPORTED;
  std::vector<char> buffer(size + 1);
  const CUresult rc = s.driver().cuLogsDumpToMemory(q.has_iterator ? &iterator : nullptr,
                                                    buffer.data(), &size, q.flags);
  if (rc != CUDA_SUCCESS) return rc;
  a->iterator = iterator;
  a->lines.assign(buffer.data(), std::min(size, buffer.size() - 1));
  return CUDA_SUCCESS;
}

// The client has opened its callback channel; each message goes there, to
// the callback registered under the proposed id.
CUresult logs_register(Session& s, const op::LogsRegister::Request& q, op::LogsRegister::Reply* a) {
  const uint64_t proposed = q.proposed;
  if (!s.handles().can_bind(proposed)) return CUDA_ERROR_INVALID_VALUE;
  if (!s.driver().cuLogsRegisterCallback) return CUDA_ERROR_NOT_SUPPORTED;
  CUlogsCallbackHandle handle = nullptr;
  const CUresult rc = s.driver().cuLogsRegisterCallback(
      log_callback_reached, reinterpret_cast<void*>(static_cast<uintptr_t>(proposed)), &handle);
  if (rc == CUDA_SUCCESS)
    a->handle = s.handles().bind(proposed, HandleKind::CUlogsCallbackHandle, handle);
  return rc;
}

const HandlerEntry kHandlers[] = {
    typed_entry<op::LogsDump, logs_dump>(),
    typed_entry<op::LogsRegister, logs_register>(),
};

}  // namespace

std::span<const HandlerEntry> logs_handlers() { return kHandlers; }

}  // namespace scuda::server
