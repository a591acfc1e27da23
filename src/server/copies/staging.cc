#include "server/copies/staging.h"

#include <sys/mman.h>

#include "protocol/frame.h"

namespace scuda::server {

namespace {

constexpr size_t kSize = 2 * protocol::kChunkSize;

}  // namespace

Staging::~Staging() {
  if (!data_) return;
  wait(0);
  wait(1);
  munmap(data_, kSize);
}

uint8_t* Staging::map() {
  if (!data_) {
    void* p = mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    data_ = static_cast<uint8_t*>(p);
  }
  if (!registered_ && d_.cuMemHostRegister_v2)
    registered_ =
        d_.cuMemHostRegister_v2(data_, kSize, CU_MEMHOSTREGISTER_PORTABLE) == CUDA_SUCCESS;
  return data_;
}

// The event may belong to another context than the current one, or to one
// since destroyed (whose work is then over): errors change nothing here.
void Staging::wait(int half) {
  CUevent& e = done_[half];
  if (!e) return;
  if (d_.cuEventSynchronize) d_.cuEventSynchronize(e);
  if (d_.cuEventDestroy_v2) d_.cuEventDestroy_v2(e);
  e = nullptr;
}

uint8_t* Staging::get() {
  wait(0);
  return map();
}

uint8_t* Staging::next_half() {
  half_ ^= 1;
  wait(half_);
  uint8_t* base = map();
  return base ? base + half_ * protocol::kChunkSize : nullptr;
}

// Without an event (no driver support, or a failure) the copies are waited
// for at once.
void Staging::released(CUstream stream, bool per_thread) {
  CUevent& e = done_[half_];
  auto record = per_thread ? d_.cuEventRecord_ptsz : d_.cuEventRecord;
  if (d_.cuEventCreate && record && d_.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS) {
    if (record(e, stream) == CUDA_SUCCESS) return;
    d_.cuEventDestroy_v2(e);
  }
  e = nullptr;
  auto sync = per_thread ? d_.cuStreamSynchronize_ptsz : d_.cuStreamSynchronize;
  if (sync) sync(stream);
}

}  // namespace scuda::server
