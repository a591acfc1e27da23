// The coherence traffic of managed and mapped host memory: bytes the client's
// host changed, pushed into device memory, and device memory pulled into the
// client's host pages. Plain synchronous copies on the legacy stream, so
// they are ordered with the work the client sends around them.
#include "protocol/changed_blocks.h"
#include "protocol/frame.h"
#include "protocol/ops.h"
#include "server/dispatch.h"
#include "server/session.h"

namespace scuda::server {

namespace {

using protocol::Reader;
using protocol::Writer;

CUresult page_push(Session& s, Reader& in, Writer&) {
  const CUdeviceptr dst = in.u64();
  const std::string_view data = in.blob();
  if (!in.done()) return kMalformed;
  auto fn = s.driver().cuMemcpyHtoD_v2;
  return fn ? fn(dst, data.data(), data.size()) : CUDA_ERROR_NOT_SUPPORTED;
}

CUresult page_pull(Session& s, Reader& in, Writer& out) {
  const CUdeviceptr src = in.u64();
  const uint64_t size = in.u64();
  if (!in.done() || size > protocol::kChunkSize) return kMalformed;
  auto fn = s.driver().cuMemcpyDtoH_v2;
  if (!fn) return CUDA_ERROR_NOT_SUPPORTED;
  std::vector<uint8_t>& buf = out.data();
  buf.resize(size);
  CUresult rc = fn(buf.data(), src, size);
  if (rc != CUDA_SUCCESS) buf.clear();
  return rc;
}

// A page-pull that sends only the blocks whose bytes differ from the
// client's copy (protocol/changed_blocks.h). The device bytes land in the
// page-locked staging buffer, a fast copy, and only the changed blocks are
// copied on into the reply: most compared blocks are unchanged.
CUresult page_pull_changed(Session& s, Reader& in, Writer& out) {
  protocol::ChangedPull req;
  if (!protocol::read_changed_pull(in, protocol::kChunkSize, &req)) return kMalformed;
  auto fn = s.driver().cuMemcpyDtoH_v2;
  if (!fn) return CUDA_ERROR_NOT_SUPPORTED;
  uint8_t* staged = s.staging().get();
  if (!staged) return CUDA_ERROR_OUT_OF_MEMORY;
  if (CUresult rc = fn(staged, req.address, req.size); rc != CUDA_SUCCESS) return rc;
  std::vector<uint8_t>& buf = out.data();
  const size_t map = protocol::bitmap_bytes(protocol::block_count(req.size, req.block));
  buf.assign(map, 0);
  const size_t kept = protocol::keep_changed(req, staged, buf.data());
  buf.insert(buf.end(), staged, staged + kept);
  return CUDA_SUCCESS;
}

const HandlerEntry kHandlers[] = {
    {protocol::kOpPagePush, page_push, "page-push"},
    {protocol::kOpPagePull, page_pull, "page-pull"},
    {protocol::kOpPagePullChanged, page_pull_changed, "page-pull-changed"},
};

}  // namespace

std::span<const HandlerEntry> page_handlers() { return kHandlers; }

}  // namespace scuda::server
