#include "common/random_bytes.h"

#include <sys/random.h>

#include <cerrno>

namespace scuda {

bool random_bytes(void* out, size_t size) {
  auto* p = static_cast<char*>(out);
  for (size_t at = 0; at < size;) {
    const ssize_t n = getrandom(p + at, size - at, 0);
    if (n < 0 && errno != EINTR) return false;
    if (n > 0) at += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace scuda
