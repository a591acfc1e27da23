// The session's host buffers for bulk copies: two chunks
// (protocol::kChunkSize each) of memory, page-locked through the driver when
// it allows, so that copies out of them and into them are DMA that can run
// while the neighbouring piece is on the wire. Host-to-device chunks take
// the halves in turn, each guarded by an event of its last copies, so the
// next chunk is read while the previous one's copies still run.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "common/driver_table.h"

namespace scuda::server {

class Staging {
 public:
  explicit Staging(const DriverTable& d) : d_(d) {}
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  ~Staging();

  // The first half, once no copy uses it; nullptr if no memory
  // could be had. Registration is tried until it holds; an unregistered
  // buffer is pageable memory, which the driver copies synchronously:
  // slower, equally correct (also after the context it was registered in
  // is destroyed).
  uint8_t* get();
  // The half for the next host-to-device chunk, once the copies that last
  // read it are done; then released(stream) after its copies are queued.
  uint8_t* next_half();
  // The copies out of the half next_half() gave are queued on `stream`
  // (the per-thread default stream when `per_thread` and it is null).
  void released(CUstream stream, bool per_thread);

 private:
  uint8_t* map();
  void wait(int half);

  const DriverTable& d_;
  uint8_t* data_ = nullptr;
  bool registered_ = false;
  CUevent done_[2] = {};  // the last copies out of each half
  int half_ = 0;          // the half next_half() gave last
};

}  // namespace scuda::server
