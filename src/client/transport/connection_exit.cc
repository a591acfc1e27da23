// A connection at the process's exit and across fork (connection.h): the
// last bytes written and the session let read them, and the locks held so
// that a child does not inherit them taken.
#include <poll.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <mutex>

#include "client/transport/connection.h"
#include "common/lock_order.h"

namespace scuda::client {

namespace {

// The outbox's thread holds the lock only to take what is held, so a lock
// still taken after a millisecond is a caller's, waiting for a reply.
bool lock_briefly(RankedMutex& mu) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1);
  while (!mu.try_lock())
    if (std::chrono::steady_clock::now() >= until) return false;
  return true;
}

// A socket closed with bytes unread in it resets the connection, and the
// reset drops what the session had not read yet (the program's last
// requests). So the client ends its side after its last bytes and reads
// until the session has read everything and closed, for a short while at
// most.
void linger(int fd) {
  constexpr auto kAtMost = std::chrono::seconds(2);
  if (::shutdown(fd, SHUT_WR) != 0) return;
  const auto until = std::chrono::steady_clock::now() + kAtMost;
  char unread[4096];
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    pollfd readable{fd, POLLIN, 0};
    if (left.count() <= 0 || poll(&readable, 1, static_cast<int>(left.count())) <= 0) return;
    const ssize_t n = ::recv(fd, unread, sizeof unread, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) return;
  }
}

}  // namespace

// Waits for the outbox's thread to finish a write it has begun, which the
// process's exit would cut short, then lingers.
void Connection::flush_at_exit() {
  if (!lock_briefly(mutex_)) return;
  std::lock_guard lock(mutex_, std::adopt_lock);
  flush_held();
  outbox_.stop();
  std::lock_guard write(outbox_.write_lock());
  if (!broken_ && !inherited_) linger(socket_.fd());
}

// The outbox's thread may be writing: the write lock is held across fork
// too, so that the child's copy of it is not left locked by a thread the
// child does not have.
bool Connection::before_fork() {
  if (!lock_briefly(mutex_)) return false;
  flush_held();
  outbox_.write_lock().lock();
  return true;
}

void Connection::after_fork(bool locked, bool child) {
  if (child) {
    outbox_.stop();
    inherited_ = true;
  }
  if (!locked) return;
  outbox_.write_lock().unlock();
  mutex_.unlock();
}

}  // namespace scuda::client
