#include "common/checksum.h"

#include <cstring>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace scuda {

Checksum checksum(const void* data, size_t size) {
  XXH128_canonical_t canonical;
  XXH128_canonicalFromHash(&canonical, XXH3_128bits(data, size));
  Checksum sum;
  static_assert(sizeof canonical == sizeof sum);
  std::memcpy(sum.data(), &canonical, sum.size());
  return sum;
}

}  // namespace scuda
