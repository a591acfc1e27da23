#include "sent_bytes.h"

#include <dlfcn.h>
#include <sys/socket.h>

#include <atomic>

namespace {

std::atomic<uint64_t> g_bytes{0};
thread_local uint64_t t_sends = 0;

using SendMsg = ssize_t (*)(int, const msghdr*, int);

}  // namespace

// Exported (the target sets ENABLE_EXPORTS too), so that it binds before libc's.
extern "C" __attribute__((visibility("default"))) ssize_t sendmsg(int fd, const msghdr* message,
                                                                  int flags) {
  static const auto real = reinterpret_cast<SendMsg>(dlsym(RTLD_NEXT, "sendmsg"));
  const ssize_t n = real(fd, message, flags);
  ++t_sends;
  if (n > 0) g_bytes.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  return n;
}

namespace scuda::test {

uint64_t bytes_sent() { return g_bytes.load(); }
uint64_t sends_on_this_thread() { return t_sends; }

}  // namespace scuda::test
