// Socket's one wait for a descriptor to be ready, shared by its plain and
// TLS paths (common/socket.cc, common/socket_tls.cc).
#pragma once

#include <poll.h>

#include <cerrno>
#include <chrono>

namespace scuda {

// Waits until `fd` is ready for `events`, at most `limit` (zero: no limit);
// a wait past it fails with errno ETIMEDOUT and sets *timed_out.
inline bool wait_ready(int fd, short events, std::chrono::milliseconds limit, bool* timed_out) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int n = ::poll(&p, 1, limit.count() > 0 ? static_cast<int>(limit.count()) : -1);
    if (n > 0) return true;
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) {
      *timed_out = true;
      errno = ETIMEDOUT;
    }
    return false;
  }
}

}  // namespace scuda
