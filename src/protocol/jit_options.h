// JIT options as they cross in a link request (docs/protocol.md, "link").
// Most options hold a number in their value slot, which crosses as it is. A
// log buffer is client memory, so only its size crosses and the log comes
// back in the reply; so does the wall time. Options that name arrays of
// client pointers cannot cross.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace scuda::protocol {

enum class JitValue : uint8_t { kNumber, kLogBuffer, kLogSize, kWallTime, kRefused };

// How `option`'s value crosses.
JitValue jit_value(CUjit_option option);

// At most this many options per list, and log bytes per log, cross.
constexpr uint32_t kMaxJitOptions = 64;
constexpr uint32_t kMaxJitLogBytes = 1u << 20;
// At most this many inputs per link.
constexpr uint32_t kMaxLinkInputs = 4096;

}  // namespace scuda::protocol
