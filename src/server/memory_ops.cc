// Hand-written copy requests: bulk data travels in chunks of at most
// protocol::kChunkSize, so a large copy is a pipeline of frames.
#include <algorithm>
#include <cstring>
#include <memory>

#include <spdlog/spdlog.h>

#include "protocol/ops.h"
#include "server/dispatch.h"
#include "server/session.h"

namespace scuda::server {

namespace {

using protocol::Reader;
using protocol::Writer;

// A captured copy would touch this request's buffer when the graph runs,
// long after the buffer is gone: refuse it, loudly.
CUresult refuse_capture(const DriverTable& d, void* stream, bool per_thread) {
  auto fn = per_thread ? d.cuStreamIsCapturing_ptsz : d.cuStreamIsCapturing;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (!fn || fn(static_cast<CUstream>(stream), &status) != CUDA_SUCCESS ||
      status == CU_STREAM_CAPTURE_STATUS_NONE)
    return CUDA_SUCCESS;
  spdlog::warn("refused to capture a copy of client host memory: the graph could not reach it");
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

constexpr size_t kPiece = 2u << 20;
// An async copy this small goes to the driver from pageable memory, which
// it stages and returns at once; a larger one is effectively synchronous
// from pageable memory anyway.
constexpr size_t kSmallAsync = 64u << 10;

using CopyToDevice = CUresult (*)(CUdeviceptr, const void*, size_t, CUstream);
using StreamSync = CUresult (*)(CUstream);

CUresult small_async_to_device(Session& s, CopyToDevice copy, CUdeviceptr dst, size_t size,
                               CUstream on) {
  auto data = std::make_unique_for_overwrite<uint8_t[]>(size);
  if (!s.read_data(data.get(), size)) return CUDA_ERROR_UNKNOWN;  // the session ends
  return copy(dst, data.get(), size, on);
}

// The data is read from the request piece by piece into a page-locked
// staging half, and each piece's copy is queued as soon as it is in, so
// that it runs while the next piece is read; the next chunk takes the other
// half. Only a copy the client waits for waits for its stream here.
CUresult staged_to_device(Session& s, CopyToDevice copy, StreamSync sync, CUdeviceptr dst,
                          size_t size, CUstream on, bool per_thread) {
  uint8_t* buf = s.staging().next_half();
  if (!buf) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = CUDA_SUCCESS;
  for (size_t at = 0; at < size; at += kPiece) {
    const size_t n = std::min(kPiece, size - at);
    if (!s.read_data(buf + at, n)) break;  // the session ends
    if (rc == CUDA_SUCCESS) rc = copy(dst + at, buf + at, n, on);
  }
  s.staging().released(on, per_thread);
  if (s.request().flags & protocol::kOneWay) return rc;
  const CUresult synced = sync(on);
  return rc == CUDA_SUCCESS ? synced : rc;
}

// Copies into device memory: u64 dst, u64 stream id, u8 mode, u64 size,
// then `size` bytes (at most one chunk) that the handler reads itself. A
// synchronous copy runs on the default stream, with its ordering; an async
// one keeps its stream's order.
constexpr uint32_t kHtoDHead = 8 + 8 + 1 + 8;

CUresult host_to_device(Session& s, Reader& in, Writer&) {
  const CUdeviceptr dst = in.u64();
  const uint64_t stream_id = in.u64();
  const uint8_t mode = in.u8();
  const uint64_t size = in.u64();
  if (!in.done() || size != s.unread() || size > protocol::kChunkSize) return kMalformed;
  const DriverTable& d = s.driver();
  const bool per_thread = mode & protocol::kCopyPerThread;
  const bool async = mode & protocol::kCopyAsync;
  void* stream = nullptr;
  if (!s.handles().resolve(stream_id, HandleKind::CUstream, &stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (async)
    if (CUresult rc = refuse_capture(d, stream, per_thread); rc != CUDA_SUCCESS) return rc;
  CUstream on = async ? static_cast<CUstream>(stream) : nullptr;
  CopyToDevice copy = per_thread ? d.cuMemcpyHtoDAsync_v2_ptsz : d.cuMemcpyHtoDAsync_v2;
  StreamSync sync = per_thread ? d.cuStreamSynchronize_ptsz : d.cuStreamSynchronize;
  if (!copy || !sync) return CUDA_ERROR_NOT_SUPPORTED;
  if (async && size <= kSmallAsync) return small_async_to_device(s, copy, dst, size, on);
  return staged_to_device(s, copy, sync, dst, size, on, per_thread);
}

constexpr size_t kMaxPieces = protocol::kChunkSize / kPiece;

// Events, one per piece of a chunk, destroyed with it. They are made for
// each chunk because an event belongs to the context current when it was
// created, and the client may switch contexts between chunks.
class PieceEvents {
 public:
  explicit PieceEvents(const DriverTable& d) : d_(d) {}
  ~PieceEvents() {
    for (size_t i = 0; i < count_; ++i) d_.cuEventDestroy_v2(events_[i]);
  }
  CUresult add(CUstream stream) {
    CUresult rc = d_.cuEventCreate(&events_[count_], CU_EVENT_DISABLE_TIMING);
    if (rc != CUDA_SUCCESS) return rc;
    ++count_;
    return d_.cuEventRecord(events_[count_ - 1], stream);
  }
  CUresult wait(size_t i) { return d_.cuEventSynchronize(events_[i]); }

 private:
  const DriverTable& d_;
  CUevent events_[kMaxPieces] = {};
  size_t count_ = 0;
};

using CopyToHost = CUresult (*)(void*, CUdeviceptr, size_t, CUstream);

// A copy of one piece needs no events: the stream's end is the copy's.
CUresult small_to_host(Session& s, CopyToHost copy, uint8_t* buf, CUdeviceptr src, size_t size,
                       CUstream on, bool per_thread) {
  const DriverTable& d = s.driver();
  auto sync = per_thread ? d.cuStreamSynchronize_ptsz : d.cuStreamSynchronize;
  if (!sync) return CUDA_ERROR_NOT_SUPPORTED;
  CUresult rc = copy(buf, src, size, on);
  if (rc == CUDA_SUCCESS) rc = sync(on);
  if (rc != CUDA_SUCCESS) return rc;
  s.begin_reply(size, buf, size);
  return kReplied;
}

// Copies out of device memory into the reply, which this handler writes
// itself: every piece's copy into the staging buffer is queued first (so a
// bad range fails before anything is sent), then each piece is sent as soon
// as its copy completes, while the next ones are still in flight. A piece
// that fails after the reply has begun is sent as zeros and its error is
// returned by the next synchronizing request.
CUresult device_to_host(Session& s, Reader& in, Writer&) {
  const CUdeviceptr src = in.u64();
  const uint64_t size = in.u64();
  const uint64_t stream_id = in.u64();
  const uint8_t mode = in.u8();
  if (!in.done() || size > protocol::kChunkSize || (s.request().flags & protocol::kOneWay))
    return kMalformed;
  const DriverTable& d = s.driver();
  const bool per_thread = mode & protocol::kCopyPerThread;
  void* stream = nullptr;
  if (!s.handles().resolve(stream_id, HandleKind::CUstream, &stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (mode & protocol::kCopyAsync)
    if (CUresult rc = refuse_capture(d, stream, per_thread); rc != CUDA_SUCCESS) return rc;
  // A synchronous copy runs on the default stream, with its ordering.
  CUstream on = mode & protocol::kCopyAsync ? static_cast<CUstream>(stream) : nullptr;
  CopyToHost copy = per_thread ? d.cuMemcpyDtoHAsync_v2_ptsz : d.cuMemcpyDtoHAsync_v2;
  if (!copy || !d.cuEventCreate || !d.cuEventRecord || !d.cuEventSynchronize ||
      !d.cuEventDestroy_v2)
    return CUDA_ERROR_NOT_SUPPORTED;
  uint8_t* buf = s.staging().get();
  if (!buf) return CUDA_ERROR_OUT_OF_MEMORY;
  if (size <= kPiece) return small_to_host(s, copy, buf, src, size, on, per_thread);
  PieceEvents events(d);
  CUresult rc = CUDA_SUCCESS;
  for (size_t at = 0; at < size && rc == CUDA_SUCCESS; at += kPiece) {
    rc = copy(buf + at, src + at, std::min<size_t>(kPiece, size - at), on);
    if (rc == CUDA_SUCCESS) rc = events.add(on);
  }
  if (rc == CUDA_SUCCESS) rc = events.wait(0);
  if (rc != CUDA_SUCCESS) {
    if (d.cuCtxSynchronize) d.cuCtxSynchronize();  // nothing may still write into buf
    return rc;
  }
  if (s.begin_reply(size, buf, kPiece) != CUDA_SUCCESS) return kReplied;
  for (size_t i = 1, at = kPiece; at < size; ++i, at += kPiece) {
    const size_t n = std::min<size_t>(kPiece, size - at);
    if ((rc = events.wait(i)) != CUDA_SUCCESS) {
      std::memset(buf + at, 0, n);
      s.latch(rc);
    }
    if (!s.send_data(buf + at, n)) break;
  }
  return kReplied;
}

const HandlerEntry kHandlers[] = {
    {protocol::kOpMemcpyHtoD, host_to_device, "memcpy-htod", kHtoDHead},
    {protocol::kOpMemcpyDtoH, device_to_host, "memcpy-dtoh"},
};

}  // namespace

std::span<const HandlerEntry> memory_handlers() { return kHandlers; }

}  // namespace scuda::server
