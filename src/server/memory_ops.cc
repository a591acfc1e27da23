// Hand-written copy requests: bulk data travels in chunks of at most
// protocol::kChunkSize, so a large copy is a pipeline of frames.
#include <spdlog/spdlog.h>

#include <vector>

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

// Copies into device memory. For an async copy the source is the request's
// own pageable buffer: the driver returns once it has staged pageable data,
// so the buffer may go away right after, and stream order is kept.
CUresult host_to_device(Session& s, Reader& in, Writer&) {
  const CUdeviceptr dst = in.u64();
  const uint64_t stream_id = in.u64();
  const uint8_t mode = in.u8();
  const std::string_view data = in.blob();
  if (!in.done()) return kMalformed;
  const DriverTable& d = s.driver();
  const bool per_thread = mode & protocol::kCopyPerThread;
  void* stream = nullptr;
  if (!s.handles().resolve(stream_id, HandleKind::CUstream, &stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (!(mode & protocol::kCopyAsync)) {
    auto fn = per_thread ? d.cuMemcpyHtoD_v2_ptds : d.cuMemcpyHtoD_v2;
    return fn ? fn(dst, data.data(), data.size()) : CUDA_ERROR_NOT_SUPPORTED;
  }
  if (CUresult rc = refuse_capture(d, stream, per_thread); rc != CUDA_SUCCESS) return rc;
  auto fn = per_thread ? d.cuMemcpyHtoDAsync_v2_ptsz : d.cuMemcpyHtoDAsync_v2;
  return fn ? fn(dst, data.data(), data.size(), static_cast<CUstream>(stream))
            : CUDA_ERROR_NOT_SUPPORTED;
}

// Copies out of device memory into the reply. Pageable destinations make
// even the async driver call complete before it returns, in stream order.
CUresult device_to_host(Session& s, Reader& in, Writer& out) {
  const CUdeviceptr src = in.u64();
  const uint64_t size = in.u64();
  const uint64_t stream_id = in.u64();
  const uint8_t mode = in.u8();
  if (!in.done() || size > protocol::kChunkSize) return kMalformed;
  const DriverTable& d = s.driver();
  const bool per_thread = mode & protocol::kCopyPerThread;
  void* stream = nullptr;
  if (!s.handles().resolve(stream_id, HandleKind::CUstream, &stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (mode & protocol::kCopyAsync)
    if (CUresult rc = refuse_capture(d, stream, per_thread); rc != CUDA_SUCCESS) return rc;
  std::vector<uint8_t>& buf = out.data();
  buf.resize(size);
  CUresult rc = CUDA_ERROR_NOT_SUPPORTED;
  if (!(mode & protocol::kCopyAsync)) {
    auto fn = per_thread ? d.cuMemcpyDtoH_v2_ptds : d.cuMemcpyDtoH_v2;
    if (fn) rc = fn(buf.data(), src, size);
  } else {
    auto fn = per_thread ? d.cuMemcpyDtoHAsync_v2_ptsz : d.cuMemcpyDtoHAsync_v2;
    if (fn) rc = fn(buf.data(), src, size, static_cast<CUstream>(stream));
  }
  if (rc != CUDA_SUCCESS) buf.clear();
  return rc;
}

const HandlerEntry kHandlers[] = {
    {protocol::kOpMemcpyHtoD, host_to_device, "memcpy-htod"},
    {protocol::kOpMemcpyDtoH, device_to_host, "memcpy-dtoh"},
};

}  // namespace

std::span<const HandlerEntry> memory_handlers() { return kHandlers; }

}  // namespace scuda::server
