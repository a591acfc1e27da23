// A fast checksum for bytes that must arrive or read back unchanged: XXH3's
// 128-bit hash, in its canonical (big-endian) byte order. It finds damage,
// not tampering; names that an adversary must not forge are SHA-256
// (protocol::image_hash).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace scuda {

using Checksum = std::array<uint8_t, 16>;

// The checksum of the `size` bytes at `data`.
Checksum checksum(const void* data, size_t size);

}  // namespace scuda
