// Copies over the lanes (lanes.h): the request comes on the connection, in
// its place among the others; the bytes cross the lanes.
#include <spdlog/spdlog.h>

#include "protocol/ops.h"
#include "server/copy_checks.h"
#include "server/dispatch.h"
#include "server/piece_events.h"
#include "server/session.h"
#include "server/typed_handler.h"

namespace scuda::server {

namespace {

namespace op = protocol::op;
using protocol::Reader;
using protocol::Writer;

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

// u64 device address, u64 stream id, u8 mode (kCopyAsync, and kCopySettled
// one-way), u64 size, u32 lanes. Every lane moves its stripes whatever the
// result, so that the lanes stay in step with the requests. A synchronous
// copy runs on the default stream, with its ordering; one the client waits
// for, or a settled one, waits for its stream here.
CUresult lane_copy(Session& s, Reader& in, bool to_device) {
  Lanes::Copy c{};
  c.to_device = to_device;
  c.device = in.u64();
  const uint64_t stream_id = in.u64();
  const uint8_t mode = in.u8();
  c.size = in.u64();
  c.lanes = in.u32();
  const bool one_way = s.request().flags & protocol::kOneWay;
  const bool settled = mode & protocol::kCopySettled;
  if (!in.done() || (mode & ~(protocol::kCopyAsync | protocol::kCopySettled)) || !c.lanes ||
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

CUresult host_to_device(Session& s, Reader& in, Writer&) { return lane_copy(s, in, true); }
CUresult device_to_host(Session& s, Reader& in, Writer&) { return lane_copy(s, in, false); }

const HandlerEntry kHandlers[] = {
    typed_entry<op::Lanes, open_lanes>(),
    {protocol::kOpMemcpyHtoDLanes, host_to_device},
    {protocol::kOpMemcpyDtoHLanes, device_to_host},
};

}  // namespace

std::span<const HandlerEntry> lane_handlers() { return kHandlers; }

}  // namespace scuda::server
