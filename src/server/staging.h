// The session's host buffer for bulk copies: one chunk
// (protocol::kChunkSize) of memory, page-locked through the driver when it
// allows, so that copies out of it and into it are DMA that can run while
// the neighbouring piece is on the wire.
#pragma once

#include <cstdint>

#include "common/driver_table.h"

namespace scuda::server {

class Staging {
 public:
  Staging() = default;
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;
  ~Staging();

  // The buffer, or nullptr if no memory could be had. Registration is tried
  // until it holds; an unregistered buffer is pageable memory, which the
  // driver copies into synchronously: slower, equally correct (also after
  // the context it was registered in is destroyed).
  uint8_t* get(const DriverTable& d);

 private:
  uint8_t* data_ = nullptr;
  bool registered_ = false;
};

}  // namespace scuda::server
