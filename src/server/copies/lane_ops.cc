// Copies over the lanes (lanes.h): the request comes on the connection, in
// its place among the others; the bytes cross the lanes.
#include <spdlog/spdlog.h>

#include "protocol/ops.h"
#include "server/copies/copy_checks.h"
#include "server/copies/piece_events.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"
#include "server/session/typed_handler.h"

namespace scuda::server {

namespace {

namespace op = protocol::op;

// The join point each lane's join must name.
CUresult open_lanes(Session& s, const op::Lanes::Request& q, op::JoinPoint* a) {
  const uint32_t wanted = q.wanted;
  if (wanted < 1 || wanted > protocol::kMaxLanes) return CUDA_ERROR_INVALID_VALUE;
  std::string name, secret, error;
  if (!s.lanes().open(wanted, &name, &secret, &error)) {
    spdlog::error("cannot open lanes: {}", error);
    return CUDA_ERROR_OPERATING_SYSTEM;
  }
  *a = {name, secret};
  return CUDA_SUCCESS;
}

// What the copy must not be, found before any of its bytes cross.
CUresult refusal(Session& s, const Lanes::Copy& c, uint64_t stream_id, bool async, void** stream) {
  const DriverTable& d = s.driver();
  if (!d.cuMemcpyHtoDAsync_v2 || !d.cuMemcpyDtoHAsync_v2 || !d.cuStreamSynchronize ||
      !d.cuCtxGetCurrent || !can_queue_pieces(d))
    return CUDA_ERROR_NOT_SUPPORTED;
  if (!s.handles().resolve(stream_id, HandleKind::CUstream, stream))
    return CUDA_ERROR_INVALID_HANDLE;
  if (c.device + c.size < c.device) return CUDA_ERROR_INVALID_VALUE;
  return async ? refuse_capture(d, *stream, false) : CUDA_SUCCESS;
}

// op::LaneCopy. Every lane moves its stripes whatever the result, so that
// the lanes stay in step with the requests. A synchronous copy runs on the
// default stream, with its ordering; one the client waits for, or a settled
// one, waits for its stream here.
template <bool kToDevice>
CUresult lane_copy(Session& s, const op::LaneCopy& q, protocol::Empty*) {
  constexpr bool to_device = kToDevice;
  Lanes::Copy c{};
  c.to_device = to_device;
  c.device = q.device;
  const uint64_t stream_id = q.stream;
  const uint8_t mode = q.mode;
  c.size = q.size;
  c.lanes = q.lanes;
  const bool one_way = s.request().flags & protocol::kOneWay;
  const bool settled = mode & protocol::kCopySettled;
  if ((mode & ~(protocol::kCopyAsync | protocol::kCopySettled)) || !c.lanes ||
      c.lanes > s.lanes().count() || (one_way && !to_device) || (settled && !one_way))
    return kMalformed;
  const bool async = mode & protocol::kCopyAsync;
  void* stream = nullptr;
  c.refused = refusal(s, c, stream_id, async, &stream);
  c.stream = async ? static_cast<CUstream>(stream) : nullptr;
  if (c.refused == CUDA_SUCCESS) c.refused = s.driver().cuCtxGetCurrent(&c.context);
  CUresult rc = s.lanes().run(c);
  // The bytes crossed the lanes, not the session's connection.
  if (to_device) s.report().received(c.size);
  else s.report().sent(c.size);
  if (rc == CUDA_SUCCESS && to_device && (!one_way || settled))
    rc = s.driver().cuStreamSynchronize(c.stream);
  return rc;
}

const HandlerEntry kHandlers[] = {
    typed_entry<op::Lanes, open_lanes>(),
    typed_entry<op::MemcpyHtoDLanes, lane_copy<true>>(),
    typed_entry<op::MemcpyDtoHLanes, lane_copy<false>>(),
};

}  // namespace

std::span<const HandlerEntry> lane_handlers() { return kHandlers; }

}  // namespace scuda::server
