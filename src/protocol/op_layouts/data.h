// The data paths: copies, the lanes' copies, and pages and mirrors of host
// memory. (op_layouts.h says how these are used.)
#pragma once

#include <cstdint>
#include <string_view>
#include <tuple>
#include <vector>

#include "protocol/changed_blocks.h"
#include "protocol/copy_desc.h"
#include "protocol/layout.h"
#include "protocol/ops.h"

namespace scuda::protocol::op {

// An op whose request is `Req` and whose reply carries no outputs (its
// result alone, or bytes its handler writes itself).
template <Op kNumber, class Req>
struct NoOutputs {
  static constexpr Op kOp = kNumber;
  using Request = Req;
  using Reply = Empty;
};

// Bytes written at `address`, read in place (the data paths' requests).
struct DataAt {
  uint64_t address = 0;
  std::string_view bytes;
  auto fields() { return std::tie(address, bytes); }
};

// A window of `size` bytes (at most kChunkSize) at `address`.
struct Window {
  uint64_t address = 0;
  uint64_t size = 0;
  auto fields() { return std::tie(address, size); }
};

// Bytes the client's host changed in managed memory, into device memory at
// `address` (one-way).
struct PagePush : NoOutputs<kOpPagePush, DataAt> {};

// Device memory into the client's host pages: the reply carries the
// window's bytes as they are, after the result.
struct PagePull : NoOutputs<kOpPagePull, Window> {};

// One box of a 2D or 3D copy of any shape (protocol/copy_desc.h): a host
// source's bytes come as `data` (empty otherwise), which the client sends
// from where they lie; the reply carries a host destination's bytes as
// they are, after the result.
struct Memcpy3D {
  static constexpr Op kOp = kOpMemcpy3D;
  struct Request {
    uint8_t shape = 0;  // CopyShape
    uint8_t mode = 0;
    uint64_t stream = 0;
    CopyDesc desc;
    std::string_view data;
    auto fields() { return std::tie(shape, mode, stream, desc, data); }
  };
};

// A page-pull that skips the blocks the client holds as the device does
// (protocol/changed_blocks.h).
struct PagePullChanged {
  static constexpr Op kOp = kOpPagePullChanged;
  using Request = ChangedPull;
  using Reply = ChangedBlocks;
};

// A run of registered memory's bytes that the device changed, at its host
// address.
struct ChangedRun {
  uint64_t address = 0;
  std::string_view bytes;
  auto fields() { return std::tie(address, bytes); }
};

// The runs the device changed in registered memory: mirror-pull's reply,
// the changes a session sends ahead of a synchronizing reply, and those a
// reached host callback carries after its id (docs/protocol.md).
struct MirrorChanges {
  std::vector<ChangedRun> runs;
  auto fields() { return std::tie(runs); }
};

// The runs of a window of registered memory that the device changed.
struct MirrorPull {
  static constexpr Op kOp = kOpMirrorPull;
  using Request = Window;
  using Reply = MirrorChanges;
};

// Bytes the client's host changed in registered memory, into its mirror in
// the session at the client's `address` (one-way).
struct MirrorPush : NoOutputs<kOpMirrorPush, DataAt> {};

// One frame of a turn on the live mirrors' channel: words that changed on
// the sending side, in ascending order across the turn's frames; `last` is
// 1 on a turn's last frame. The client's turn is answered by the session's.
struct LiveChanges {
  uint32_t last = 1;
  std::vector<ChangedRun> runs;
  auto fields() { return std::tie(last, runs); }
};

// A chunk of a copy into device memory (at most kChunkSize bytes): the
// request is its head, and the bytes (or, with kCopyCompressed, their lz4
// block) follow as the frame's tail, which the handler reads itself.
struct MemcpyHtoD {
  static constexpr Op kOp = kOpMemcpyHtoD;
  struct Request {
    uint64_t dst = 0;
    uint64_t stream = 0;
    uint8_t mode = 0;   // kCopy* bits
    uint64_t size = 0;  // the bytes' raw length
    auto fields() { return std::tie(dst, stream, mode, size); }
  };
  using Reply = Empty;
  static constexpr uint32_t kHeadBytes = 8 + 8 + 1 + 8;
};
static_assert(min_wire_size<MemcpyHtoD::Request>() == MemcpyHtoD::kHeadBytes);

// A chunk of a copy out of device memory (at most kChunkSize bytes): the
// reply carries the bytes after the result (compressed pieces with
// kCopyCompressed), written by the handler as they come.
struct MemcpyDtoH {
  static constexpr Op kOp = kOpMemcpyDtoH;
  struct Request {
    uint64_t src = 0;
    uint64_t size = 0;
    uint64_t stream = 0;
    uint8_t mode = 0;
    auto fields() { return std::tie(src, size, stream, mode); }
  };
  using Reply = Empty;
};

// A copy whose bytes cross `lanes` lanes while its request keeps its place
// on the connection; mode is kCopyAsync, and kCopySettled one-way.
struct LaneCopy {
  uint64_t device = 0;
  uint64_t stream = 0;
  uint8_t mode = 0;
  uint64_t size = 0;
  uint32_t lanes = 0;
  auto fields() { return std::tie(device, stream, mode, size, lanes); }
};

struct MemcpyHtoDLanes : NoOutputs<kOpMemcpyHtoDLanes, LaneCopy> {};

struct MemcpyDtoHLanes : NoOutputs<kOpMemcpyDtoHLanes, LaneCopy> {};

}  // namespace scuda::protocol::op
