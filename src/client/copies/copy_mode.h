// The mode bits a copy's request carries (protocol/ops.h): whether it is
// asynchronous, and whether its NULL stream is the calling thread's.
#pragma once

#include <cstdint>

#include "forward.h"
#include "protocol/ops.h"

namespace scuda::client {

inline constexpr uint8_t kSync = 0;
inline constexpr uint8_t kAsync = protocol::kCopyAsync;

// `mode` with kCopyPerThread where the entry point names the thread's stream.
inline uint8_t copy_mode(DefaultStream d, uint8_t mode) {
  return per_thread(d) ? mode | protocol::kCopyPerThread : mode;
}

}  // namespace scuda::client
