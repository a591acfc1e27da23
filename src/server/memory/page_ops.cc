// The coherence traffic of managed and mapped host memory: bytes the client's
// host changed, pushed into device memory, and device memory pulled into the
// client's host pages. Plain synchronous copies on the legacy stream, so
// they are ordered with the work the client sends around them.
#include "protocol/changed_blocks.h"
#include "protocol/frame.h"
#include "protocol/op_layouts.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"
#include "server/session/typed_handler.h"

namespace scuda::server {

namespace {

namespace op = protocol::op;
using protocol::Reader;
using protocol::Writer;

CUresult page_push(Session& s, const op::PagePush::Request& q, protocol::Empty*) {
  auto fn = s.driver().cuMemcpyHtoD_v2;
  return fn ? fn(q.address, q.bytes.data(), q.bytes.size()) : CUDA_ERROR_NOT_SUPPORTED;
}

// The device bytes go through the session's page-locked staging buffer: a
// copy into it runs several times faster than into pageable memory.
CUresult page_pull(Session& s, const op::PagePull::Request& q, protocol::Empty*) {
  if (q.size > protocol::kChunkSize) return kMalformed;
  auto fn = s.driver().cuMemcpyDtoH_v2;
  if (!fn) return CUDA_ERROR_NOT_SUPPORTED;
  uint8_t* staged = s.staging().get();
  if (!staged) return CUDA_ERROR_OUT_OF_MEMORY;
  if (CUresult rc = fn(staged, q.address, q.size); rc != CUDA_SUCCESS) return rc;
  s.begin_reply(q.size, staged, q.size);
  return kReplied;
}

// A page-pull that sends only the blocks whose bytes differ from the
// client's copy (protocol/changed_blocks.h): the changed blocks are closed
// up in the staging buffer and sent from there, behind the head that
// write_head makes of the reply's layout (so `reply` stays unused).
CUresult page_pull_changed(Session& s, const op::PagePullChanged::Request& req,
                           op::PagePullChanged::Reply*) {
  if (!protocol::valid_changed_pull(req, protocol::kChunkSize)) return kMalformed;
  auto fn = s.driver().cuMemcpyDtoH_v2;
  if (!fn) return CUDA_ERROR_NOT_SUPPORTED;
  uint8_t* staged = s.staging().get();
  if (!staged) return CUDA_ERROR_OUT_OF_MEMORY;
  if (CUresult rc = fn(staged, req.address, req.size); rc != CUDA_SUCCESS) return rc;
  std::vector<uint8_t> bitmap(protocol::bitmap_bytes(protocol::block_count(req.size, req.block)));
  const size_t kept = protocol::keep_changed(req, staged, bitmap.data());
  Writer head;
  protocol::write_head(
      head, protocol::ChangedBlocks{{reinterpret_cast<const char*>(bitmap.data()), bitmap.size()},
                                    {reinterpret_cast<const char*>(staged), kept}});
  if (s.begin_reply(head.size() + kept, head.data().data(), head.size()) == CUDA_SUCCESS)
    s.send_data(staged, kept);
  return kReplied;
}

const HandlerEntry kHandlers[] = {
    typed_entry<op::PagePush, page_push>(),
    typed_entry<op::PagePull, page_pull>(),
    typed_entry<op::PagePullChanged, page_pull_changed>(),
};

}  // namespace

std::span<const HandlerEntry> page_handlers() { return kHandlers; }

}  // namespace scuda::server
