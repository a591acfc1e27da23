// Hand-written copy requests: bulk data travels in chunks of at most
// protocol::kChunkSize, so a large copy is a pipeline of frames.
#include <algorithm>
#include <cstring>
#include <memory>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/compression.h"
#include "protocol/compressed_pieces.h"
#include "protocol/op_layouts.h"
#include "server/copies/copy_checks.h"
#include "server/copies/piece_events.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"
#include "server/session/typed_handler.h"

namespace scuda::server {

CUresult refuse_capture(const DriverTable& d, void* stream, bool per_thread) {
  auto fn = per_thread ? d.cuStreamIsCapturing_ptsz : d.cuStreamIsCapturing;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  if (!fn || fn(static_cast<CUstream>(stream), &status) != CUDA_SUCCESS ||
      status == CU_STREAM_CAPTURE_STATUS_NONE)
    return CUDA_SUCCESS;
  spdlog::debug("refused to capture a copy of client host memory: the graph could not reach it");
  return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
}

namespace {

namespace op = protocol::op;

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

// After a chunk's copies out of its staging half are queued: only a copy the
// client waits for waits for its stream.
CUresult release_half(Session& s, StreamSync sync, CUstream on, bool per_thread, CUresult rc) {
  s.staging().released(on, per_thread);
  if (s.request().flags & protocol::kOneWay) return rc;
  const CUresult synced = sync(on);
  return rc == CUDA_SUCCESS ? synced : rc;
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
  return release_half(s, sync, on, per_thread, rc);
}

// A compressed chunk: its lz4 block is read whole, then decoded straight
// into a staging half, whose copy is queued at once. (Compression is for
// links slow enough that the copy's overlap with the reading matters little.)
CUresult inflated_to_device(Session& s, CopyToDevice copy, StreamSync sync, CUdeviceptr dst,
                            size_t size, CUstream on, bool per_thread) {
  const size_t block_size = s.unread();
  uint8_t* block = s.scratch().get(block_size);
  if (!s.read_data(block, block_size)) return CUDA_ERROR_UNKNOWN;  // the session ends
  uint8_t* buf = s.staging().next_half();
  if (!buf) return CUDA_ERROR_OUT_OF_MEMORY;
  if (!compression::decompress(block, block_size, buf, size))
    return s.malformed(fmt::format(
        "its lz4 block ({} bytes) does not decode to the {} bytes announced", block_size, size));
  return release_half(s, sync, on, per_thread, copy(dst, buf, size, on));
}

// Whether a compressed chunk's sizes can be those of a real one, which
// bounds what is read before the block is decoded.
CUresult check_block(Session& s, uint64_t size) {
  if (size > protocol::kChunkSize)
    return s.malformed(
        fmt::format("{} bytes announced, more than a chunk ({})", size, protocol::kChunkSize));
  if (s.unread() > compression::bound(size))
    return s.malformed(
        fmt::format("an lz4 block of {} bytes cannot hold only {} bytes", s.unread(), size));
  return CUDA_SUCCESS;
}

// Copies into device memory (op::MemcpyHtoD): the bytes, or with
// kCopyCompressed their lz4 block, are read here from the frame's tail. A
// synchronous copy runs on the default stream, with its ordering; an async
// one keeps its stream's order.
CUresult host_to_device(Session& s, const op::MemcpyHtoD::Request& q, protocol::Empty*) {
  const CUdeviceptr dst = q.dst;
  const uint64_t size = q.size;
  const uint8_t mode = q.mode;
  const bool compressed = mode & protocol::kCopyCompressed;
  if (compressed) {
    if (CUresult rc = check_block(s, size); rc != CUDA_SUCCESS) return rc;
  } else if (size != s.unread() || size > protocol::kChunkSize) {
    return kMalformed;
  }
  const DriverTable& d = s.driver();
  const bool per_thread = mode & protocol::kCopyPerThread;
  const bool async = mode & protocol::kCopyAsync;
  void* stream = nullptr;
  if (!s.handles().resolve(q.stream, HandleKind::CUstream, &stream))
    return CUDA_ERROR_INVALID_HANDLE;
  if (async)
    if (CUresult rc = refuse_capture(d, stream, per_thread); rc != CUDA_SUCCESS) return rc;
  CUstream on = async ? static_cast<CUstream>(stream) : nullptr;
  CopyToDevice copy = per_thread ? d.cuMemcpyHtoDAsync_v2_ptsz : d.cuMemcpyHtoDAsync_v2;
  StreamSync sync = per_thread ? d.cuStreamSynchronize_ptsz : d.cuStreamSynchronize;
  if (!copy || !sync) return CUDA_ERROR_NOT_SUPPORTED;
  if (compressed) return inflated_to_device(s, copy, sync, dst, size, on, per_thread);
  if (async && size <= kSmallAsync) return small_async_to_device(s, copy, dst, size, on);
  return staged_to_device(s, copy, sync, dst, size, on, per_thread);
}

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

// A piece whose copy fails once the reply is under way is sent as zeros, and
// its error returned by the next synchronizing request.
void wait_piece(Session& s, PieceEvents& events, size_t i, uint8_t* piece, size_t n) {
  s.latch(wait_or_zero(events, i, piece, n));
}

// A compressed reply (protocol/compressed_pieces.h): each piece is
// compressed, or not, as soon as its copy completes, while the next pieces'
// copies run; the reply goes out once all are done, since its length leads
// it. It then drains from the socket while the next chunk is copied.
CUresult compressed_to_host(Session& s, CopyToHost copy, uint8_t* buf, CUdeviceptr src, size_t size,
                            CUstream on) {
  PieceEvents events(s.driver());
  if (CUresult rc = queue_pieces(s.driver(), events, copy, buf, src, size, on); rc != CUDA_SUCCESS)
    return rc;
  protocol::PieceWriter pieces(s.scratch().get(protocol::PieceWriter::room(size, kPiece)));
  for (size_t i = 0, at = 0; at < size; ++i, at += kPiece) {
    const size_t n = std::min<size_t>(kPiece, size - at);
    if (i) wait_piece(s, events, i, buf + at, n);
    pieces.add(buf + at, static_cast<uint32_t>(n));
  }
  if (s.begin_reply(pieces.size()) == CUDA_SUCCESS) s.send_data(pieces.parts());
  return kReplied;
}

// Copies out of device memory into the reply, which this handler writes
// itself: every piece's copy into the staging buffer is queued first (so a
// bad range fails before anything is sent), then each piece is sent as soon
// as its copy completes, while the next ones are still in flight. A piece
// that fails after the reply has begun is sent as zeros and its error is
// returned by the next synchronizing request.
CUresult device_to_host(Session& s, const op::MemcpyDtoH::Request& q, protocol::Empty*) {
  const CUdeviceptr src = q.src;
  const uint64_t size = q.size;
  const uint8_t mode = q.mode;
  if (size > protocol::kChunkSize) return kMalformed;
  const DriverTable& d = s.driver();
  const bool per_thread = mode & protocol::kCopyPerThread;
  void* stream = nullptr;
  if (!s.handles().resolve(q.stream, HandleKind::CUstream, &stream))
    return CUDA_ERROR_INVALID_HANDLE;
  if (mode & protocol::kCopyAsync)
    if (CUresult rc = refuse_capture(d, stream, per_thread); rc != CUDA_SUCCESS) return rc;
  // A synchronous copy runs on the default stream, with its ordering.
  CUstream on = mode & protocol::kCopyAsync ? static_cast<CUstream>(stream) : nullptr;
  CopyToHost copy = per_thread ? d.cuMemcpyDtoHAsync_v2_ptsz : d.cuMemcpyDtoHAsync_v2;
  if (!copy || !can_queue_pieces(d)) return CUDA_ERROR_NOT_SUPPORTED;
  uint8_t* buf = s.staging().get();
  if (!buf) return CUDA_ERROR_OUT_OF_MEMORY;
  if (mode & protocol::kCopyCompressed) return compressed_to_host(s, copy, buf, src, size, on);
  if (size <= kPiece) return small_to_host(s, copy, buf, src, size, on, per_thread);
  PieceEvents events(d);
  if (CUresult rc = queue_pieces(d, events, copy, buf, src, size, on); rc != CUDA_SUCCESS)
    return rc;
  if (s.begin_reply(size, buf, kPiece) != CUDA_SUCCESS) return kReplied;
  for (size_t i = 1, at = kPiece; at < size; ++i, at += kPiece) {
    const size_t n = std::min<size_t>(kPiece, size - at);
    wait_piece(s, events, i, buf + at, n);
    if (!s.send_data(buf + at, n)) break;
  }
  return kReplied;
}

const HandlerEntry kHandlers[] = {
    typed_entry<op::MemcpyHtoD, host_to_device>(),
    typed_entry<op::MemcpyDtoH, device_to_host>(),
};

}  // namespace

std::span<const HandlerEntry> memory_handlers() { return kHandlers; }

}  // namespace scuda::server
