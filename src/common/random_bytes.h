// Bytes from the kernel's random source, for secrets other processes must
// not guess.
#pragma once

#include <cstddef>

namespace scuda {

// Fills `out` with `size` random bytes; false (errno set) when the kernel
// cannot give them.
bool random_bytes(void* out, size_t size);

}  // namespace scuda
