// Device-to-host copies in pieces: each piece's copy into a host buffer is
// queued with an event after it, so that the piece can be sent as soon as
// its copy is done, while the next ones still run.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "common/driver_table.h"
#include "protocol/frame.h"

namespace scuda::server {

constexpr size_t kPiece = 2u << 20;
constexpr size_t kMaxPieces = protocol::kChunkSize / kPiece;

using CopyToHost = CUresult (*)(void*, CUdeviceptr, size_t, CUstream);

// Events, one per piece of a chunk, destroyed with it. They are made for
// each chunk because an event belongs to the context current when it was
// created, and the client may switch contexts between chunks.
class PieceEvents {
 public:
  explicit PieceEvents(const DriverTable& d) : d_(d) {}
  PieceEvents(const PieceEvents&) = delete;
  PieceEvents& operator=(const PieceEvents&) = delete;
  ~PieceEvents();
  CUresult add(CUstream stream);
  // Nothing to wait for past the last event (a chunk of no bytes).
  CUresult wait(size_t i);

 private:
  const DriverTable& d_;
  CUevent events_[kMaxPieces] = {};
  size_t count_ = 0;
};

// Whether the driver has what queue_pieces needs.
bool can_queue_pieces(const DriverTable& d);

// Queues every piece's copy of `size` bytes (at most a chunk) into `buf`,
// with an event after each, and waits for the first; on failure nothing is
// left writing into `buf`.
CUresult queue_pieces(const DriverTable& d, PieceEvents& events, CopyToHost copy, uint8_t* buf,
                      CUdeviceptr src, size_t size, CUstream on);

// Waits for piece i; a piece whose copy failed is zeroed, and the error
// returned.
CUresult wait_or_zero(PieceEvents& events, size_t i, uint8_t* piece, size_t n);

}  // namespace scuda::server
