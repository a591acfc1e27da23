#include "server/copies/piece_events.h"

#include <algorithm>
#include <cstring>

namespace scuda::server {

PieceEvents::~PieceEvents() {
  for (size_t i = 0; i < count_; ++i) d_.cuEventDestroy_v2(events_[i]);
}

CUresult PieceEvents::add(CUstream stream) {
  CUresult rc = d_.cuEventCreate(&events_[count_], CU_EVENT_DISABLE_TIMING);
  if (rc != CUDA_SUCCESS) return rc;
  ++count_;
  return d_.cuEventRecord(events_[count_ - 1], stream);
}

CUresult PieceEvents::wait(size_t i) {
  return i < count_ ? d_.cuEventSynchronize(events_[i]) : CUDA_SUCCESS;
}

bool can_queue_pieces(const DriverTable& d) {
  return d.cuEventCreate && d.cuEventRecord && d.cuEventSynchronize && d.cuEventDestroy_v2;
}

CUresult queue_pieces(const DriverTable& d, PieceEvents& events, CopyToHost copy, uint8_t* buf,
                      CUdeviceptr src, size_t size, CUstream on) {
  CUresult rc = CUDA_SUCCESS;
  for (size_t at = 0; at < size && rc == CUDA_SUCCESS; at += kPiece) {
    rc = copy(buf + at, src + at, std::min<size_t>(kPiece, size - at), on);
    if (rc == CUDA_SUCCESS) rc = events.add(on);
  }
  if (rc == CUDA_SUCCESS) rc = events.wait(0);
  if (rc != CUDA_SUCCESS && d.cuCtxSynchronize) d.cuCtxSynchronize();
  return rc;
}

CUresult wait_or_zero(PieceEvents& events, size_t i, uint8_t* piece, size_t n) {
  const CUresult rc = events.wait(i);
  if (rc != CUDA_SUCCESS) std::memset(piece, 0, n);
  return rc;
}

}  // namespace scuda::server
