// Socket's non-blocking calls, and its I/O once TLS carries it
// (common/tls_stream.h): TlsStream moves what it can, and the waits for the
// socket to be ready happen here, outside its lock.
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/socket.h"
#include "common/socket_wait.h"
#include "common/tls_stream.h"

namespace scuda {

ssize_t Socket::read_now(void* data, size_t size, short* wait) {
  if (tls_) return tls_->read_now(data, size, wait);
  *wait = POLLIN;
  return ::recv(fd_, data, size, MSG_DONTWAIT);
}

ssize_t Socket::write_now(const void* data, size_t size, short* wait) {
  if (tls_) return tls_->write_now(data, size, wait);
  *wait = POLLOUT;
  return ::send(fd_, data, size, MSG_DONTWAIT | MSG_NOSIGNAL);
}

ssize_t Socket::flush_now(short* wait) { return tls_ ? tls_->flush_now(wait) : 0; }

void TlsStreamDeleter::operator()(TlsStream* tls) const { delete tls; }

void Socket::use_tls(TlsStreamPtr tls) { tls_ = std::move(tls); }

std::string Socket::tls_error() const { return tls_ ? tls_->error() : ""; }

std::string Socket::peer_certificate() const { return tls_ ? tls_->peer_certificate() : ""; }

bool Socket::tls_wait(short events) {
  return wait_ready(fd_, events, events == POLLIN ? idle_limit_ : write_limit_, &timed_out_);
}

ssize_t Socket::tls_read_some(void* data, size_t size) {
  for (;;) {
    short wait = 0;
    const ssize_t n = tls_->read_now(data, size, &wait);
    if (n >= 0 || errno != EAGAIN) return n;
    if (!tls_wait(wait)) return -1;
  }
}

ssize_t Socket::tls_read_spinning(void* data, size_t size, std::chrono::microseconds spin) {
  const auto until = std::chrono::steady_clock::now() + spin;
  do {
    short wait = 0;
    const ssize_t n = tls_->read_now(data, size, &wait);
    if (n >= 0 || errno != EAGAIN) return n;
  } while (std::chrono::steady_clock::now() < until);
  return tls_read_some(data, size);
}

bool Socket::tls_write_all(const void* data, size_t size) {
  return tls_write_unflushed(data, size) && tls_flush();
}

bool Socket::tls_write_unflushed(const void* data, size_t size) {
  const auto* p = static_cast<const uint8_t*>(data);
  while (size > 0) {
    short wait = 0;
    const ssize_t n = tls_->write_now(p, size, &wait);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
    } else if (n == 0 || errno != EAGAIN || !tls_wait(wait)) {
      return false;
    }
  }
  return true;
}

bool Socket::tls_flush() {
  for (;;) {
    short wait = 0;
    if (tls_->flush_now(&wait) == 0) return true;
    if (errno != EAGAIN || !tls_wait(wait)) return false;
  }
}

namespace {

// Pieces smaller than this are gathered into one write, so that a frame's
// header and its payload cross in one TLS record, as writev sends them in
// one segment.
constexpr size_t kGather = 16u << 10;

}  // namespace

bool Socket::tls_writev_all(iovec* iov, int count) {
  thread_local std::vector<uint8_t> gathered;
  gathered.clear();
  auto hand_over = [&] {
    const bool ok = gathered.empty() || tls_write_unflushed(gathered.data(), gathered.size());
    gathered.clear();
    return ok;
  };
  for (int i = 0; i < count; ++i) {
    const auto* base = static_cast<const uint8_t*>(iov[i].iov_base);
    if (iov[i].iov_len < kGather) {
      gathered.insert(gathered.end(), base, base + iov[i].iov_len);
      if (gathered.size() >= kGather && !hand_over()) return false;
    } else if (!hand_over() || !tls_write_unflushed(base, iov[i].iov_len)) {
      return false;
    }
  }
  return hand_over() && tls_flush();
}

}  // namespace scuda
