#include "client/managed/page_transfers.h"

#include <algorithm>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/managed/coherent_pages.h"
#include "client/op_calls.h"
#include "client/stats.h"
#include "client/transport/lane_copies.h"
#include "client/transport/lanes.h"
#include "protocol/changed_blocks.h"
#include "protocol/frame.h"
#include "protocol/ops.h"

namespace scuda::client::page_transfers {

namespace {

// Pulls are asked in pieces this size, so that the server copies the next
// piece out of device memory while the client reads the one before.
constexpr size_t kPullPiece = 1u << 20;

// The blocks a compared pull hashes: small enough that a buffer the device
// changed in part still skips most of what it left, large enough that the
// hashes are a small part of the request.
constexpr uint32_t kHashBlock = 64u << 10;

// Runs this large cross the lanes when they are open. Smaller than what
// copies send there: a walk's windows double up to this size on the
// connection, one fault at a time, so the lanes' speed counts from here on.
constexpr size_t kLaneRun = 4u << 20;

uint32_t lanes_for(size_t size) { return size >= kLaneRun ? lanes::usable(lanes::kSmallest) : 0; }

// A copy on the legacy stream, ordered as page-push and page-pull are. A
// pull is asked as async so that it does not report earlier one-way
// errors, which stay latched for the program's next synchronizing call. A
// push is one-way and settled: the session finishes it before the next
// request, so the bytes are in place for any later work, and the fault
// service does not wait for it while the host writes on.
CUresult lane_pull(Connection& conn, const Range& r, uint32_t lanes) {
  stats::Timed timed("managed: lane pull");
  return over_lanes(conn, protocol::kOpMemcpyDtoHLanes, r.address, r.client_bytes(), r.size,
                    nullptr, protocol::kCopyAsync, lanes, true);
}

bool lane_push(Connection& conn, const Range& r, uint32_t lanes) {
  return over_lanes(conn, protocol::kOpMemcpyHtoDLanes, r.address, r.client_bytes(), r.size,
                    nullptr, protocol::kCopySettled, lanes, false) == CUDA_SUCCESS;
}

void push_frames(Connection& conn, const Range& r) {
  for (size_t off = 0; off < r.size; off += protocol::kChunkSize) {
    const size_t n = std::min(protocol::kChunkSize, r.size - off);
    const auto* bytes = static_cast<const char*>(r.client_bytes()) + off;
    post_data<protocol::op::PagePush>(conn, {r.address + off, std::string_view(bytes, n)});
  }
}

struct Asked {
  uint64_t id;
  Range piece;
  Range* whole;  // the range the piece is of
};

bool ask(Connection& conn, Range& r, std::vector<Asked>& asked) {
  for (size_t off = 0; off < r.size; off += kPullPiece) {
    const Range piece{r.address + off, std::min(kPullPiece, r.size - off),
                      static_cast<uint8_t*>(r.client_bytes()) + off, r.compare};
    protocol::Writer w;
    if (piece.compare) {
      stats::Timed timed("managed: hash");
      protocol::write_changed_pull(w, piece.address, piece.host, piece.size, kHashBlock);
    } else {
      protocol::write(w, protocol::op::PagePull::Request{piece.address, piece.size});
    }
    const uint32_t op = piece.compare ? protocol::kOpPagePullChanged : protocol::op::PagePull::kOp;
    uint64_t id = 0;
    if (!conn.send(op, 0, w.data().data(), w.size(), nullptr, 0, &id)) return false;
    asked.push_back({id, piece, &r});
  }
  return true;
}

// Logs a failed transfer's result, so that stale host data has a cause.
bool succeeded(CUresult rc, const char* how, const Range& r) {
  if (rc != CUDA_SUCCESS)
    spdlog::error("managed memory: {} of {} bytes at {:#x} failed ({})", how, r.size, r.address,
                  static_cast<int>(rc));
  return rc == CUDA_SUCCESS;
}

// Reads the reply to a compared piece into its client bytes, counting what
// it moved and what it found unchanged.
bool read_changed(Connection& conn, const Asked& a) {
  std::vector<uint8_t> reply;
  if (!succeeded(conn.receive(a.id, &reply), "page-pull-changed", a.piece)) return false;
  protocol::Reader in(reply);
  size_t changed = 0;
  std::string why;
  if (!protocol::read_changed(in, a.piece.host, a.piece.size, kHashBlock, &changed, &why)) {
    spdlog::error("managed memory: the server sent {} for {} bytes at {:#x}", why, a.piece.size,
                  a.piece.address);
    return false;
  }
  coherence::count_traffic(0, changed);
  a.whole->unchanged += a.piece.size - changed;
  return true;
}

// Reads every asked piece; false when one failed.
bool read_asked(Connection& conn, std::vector<Asked>& asked) {
  bool ok = true;
  for (const Asked& a : asked) {
    if (a.piece.compare) {
      ok &= read_changed(conn, a);
      continue;
    }
    coherence::count_traffic(0, a.piece.size);
    ok &= succeeded(conn.receive_into(a.id, a.piece.client_bytes(), a.piece.size), "page-pull",
                    a.piece);
  }
  asked.clear();
  return ok;
}

}  // namespace

void push(Connection& conn, std::span<const Range> ranges) {
  for (const Range& r : ranges) {
    coherence::count_traffic(r.size, 0);
    if (const uint32_t lanes = lanes_for(r.size); lanes && lane_push(conn, r, lanes)) continue;
    push_frames(conn, r);
  }
}

bool pull(Connection& conn, std::span<Range> ranges) {
  std::vector<Asked> asked;
  bool ok = true;
  for (Range& r : ranges) {
    r.unchanged = 0;
    if (const uint32_t lanes = r.compare ? 0 : lanes_for(r.size)) {
      coherence::count_traffic(0, r.size);
      // The session answers what was asked before it comes to the lanes.
      ok &= read_asked(conn, asked);
      ok &= succeeded(lane_pull(conn, r, lanes), "a lane pull", r);
      continue;
    }
    if (!ask(conn, r, asked)) return false;
  }
  return read_asked(conn, asked) && ok;
}

}  // namespace scuda::client::page_transfers
