// Host-side data for the fault and load programs: a seeded generator, data
// made from it, and FNV-1a checksums.
#pragma once

#include <cstddef>
#include <cstdint>

// xorshift64*: a fixed sequence per seed, so a failing run can be repeated.
struct Rng {
  uint64_t x;
  explicit Rng(uint64_t seed) : x(seed * 0x9E3779B97F4A7C15ull + 1) {}
  uint64_t next() {
    x ^= x >> 12, x ^= x << 25, x ^= x >> 27;
    return x * 0x2545F4914F6CDD1Dull;
  }
};

// FNV-1a 64 of n bytes.
inline uint64_t fnv1a(const unsigned char* p, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

// n bytes from the seed, eight at a time.
inline void fill_bytes(unsigned char* p, size_t n, uint64_t seed) {
  Rng r(seed);
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = r.next();
    for (size_t k = 0; k < 8 && i + k < n; ++k) p[i + k] = (unsigned char)(v >> (8 * k));
  }
}

// n floats from the seed: multiples of 1/1024 below 2^14 in size, so never
// NaN, infinite or subnormal, whose handling may differ on the device.
inline void fill_floats(float* p, size_t n, uint64_t seed) {
  Rng r(seed);
  for (size_t i = 0; i < n; ++i) p[i] = (float)((int64_t)(r.next() >> 40) - (1 << 23)) / 1024.0f;
}
