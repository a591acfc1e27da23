// Host callbacks: the stream gets a stand-in host function that notes the
// callback's id; the session relays noted ids to the client ahead of its
// next synchronizing reply (Session::relay_output), and the client runs them.
#include "protocol/ops.h"
#include "server/dispatch.h"
#include "server/session.h"

namespace scuda::server {

namespace {

struct Reached {
  Session* session;
  uint64_t id;
};

void CUDA_CB note_reached(void* p) {
  const Reached* r = static_cast<Reached*>(p);
  r->session->callback_reached(r->id);
  delete r;
}

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
  auto* reached = new Reached{&s, id};
  const CUresult rc = launch(static_cast<CUstream>(stream), note_reached, reached);
  if (rc != CUDA_SUCCESS) delete reached;
  return rc;
}

const HandlerEntry kHandlers[] = {
    {protocol::kOpHostCallback, host_callback, "host-callback"},
};

}  // namespace

std::span<const HandlerEntry> host_callback_handlers() { return kHandlers; }

}  // namespace scuda::server
