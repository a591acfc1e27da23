#include "common/socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

#include "common/socket_wait.h"
#include "common/tls_stream.h"

namespace scuda {

bool parse_host_port(const std::string& text, HostPort* out, std::string* error, bool any_port) {
  size_t colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    *error = fmt::format("'{}' is not HOST:PORT", text);
    return false;
  }
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']')
    host = host.substr(1, host.size() - 2);
  const std::string port_text = text.substr(colon + 1);
  char* end = nullptr;
  long port = std::strtol(port_text.c_str(), &end, 10);
  const long lowest = any_port ? 0 : 1;
  if (port_text.empty() || *end != '\0' || port < lowest || port > 65535) {
    *error = fmt::format("'{}' in '{}' is not a port number ({}-65535)", port_text, text, lowest);
    return false;
  }
  out->host = host;
  out->port = static_cast<uint16_t>(port);
  return true;
}

Socket::Socket(Socket&& other) noexcept
    : idle_limit_(other.idle_limit_),
      write_limit_(other.write_limit_),
      timed_out_(other.timed_out_),
      tls_(std::move(other.tls_)) {
  fd_ = other.release();
}

Socket::~Socket() { close(); }

void Socket::set_write_limit(std::chrono::milliseconds limit) {
  write_limit_ = limit;
  const auto ms = limit.count();
  const timeval t{static_cast<time_t>(ms / 1000), static_cast<suseconds_t>(ms % 1000 * 1000)};
  setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &t, sizeof t);
}

Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    close();
    idle_limit_ = other.idle_limit_;
    write_limit_ = other.write_limit_;
    timed_out_ = other.timed_out_;
    tls_ = std::move(other.tls_);
    fd_ = other.release();
  }
  return *this;
}

// The descriptor leaves; a TLS session, useless without it, ends.
int Socket::release() {
  int fd = fd_;
  fd_ = -1;
  tls_.reset();
  return fd;
}

void Socket::close() {
  tls_.reset();
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool Socket::write_all(const void* data, size_t size) {
  if (tls_) [[unlikely]]
    return tls_write_all(data, size);
  iovec iov{const_cast<void*>(data), size};
  return writev_all(&iov, 1);
}

// MSG_NOSIGNAL: a write to a peer that is gone fails with EPIPE rather than
// raising SIGPIPE, which would end a client program that keeps the signal's
// default disposition.
bool Socket::writev_all(iovec* iov, int count) {
  if (tls_) [[unlikely]]
    return tls_writev_all(iov, count);
  while (count > 0) {
    msghdr m{};
    m.msg_iov = iov;
    m.msg_iovlen = static_cast<size_t>(count);
    ssize_t n = ::sendmsg(fd_, &m, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    while (count > 0 && static_cast<size_t>(n) >= iov->iov_len) {
      n -= static_cast<ssize_t>(iov->iov_len);
      ++iov;
      --count;
    }
    if (count > 0) {
      iov->iov_base = static_cast<char*>(iov->iov_base) + n;
      iov->iov_len -= static_cast<size_t>(n);
    }
  }
  return true;
}

bool Socket::read_exact(void* data, size_t size, std::chrono::microseconds spin) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = read_some(p, size, spin);
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool Socket::readable_in_time() {
  return idle_limit_.count() <= 0 || wait_ready(fd_, POLLIN, idle_limit_, &timed_out_);
}

ssize_t Socket::read_some(void* data, size_t size) {
  if (tls_) [[unlikely]]
    return tls_read_some(data, size);
  if (!readable_in_time()) return -1;
  for (;;) {
    const ssize_t n = ::read(fd_, data, size);
    if (n >= 0 || errno != EINTR) return n;
  }
}

ssize_t Socket::read_some(void* data, size_t size, std::chrono::microseconds spin) {
  if (spin.count() <= 0) return read_some(data, size);
  if (tls_) [[unlikely]]
    return tls_read_spinning(data, size, spin);
  const auto until = std::chrono::steady_clock::now() + spin;
  do {
    const ssize_t n = ::recv(fd_, data, size, MSG_DONTWAIT);
    if (n >= 0 || (errno != EAGAIN && errno != EINTR)) return n;
  } while (std::chrono::steady_clock::now() < until);
  return read_some(data, size);
}

namespace {

addrinfo* resolve(const HostPort& addr, bool passive, std::string* error) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = passive ? AI_PASSIVE : 0;
  addrinfo* res = nullptr;
  const std::string port = std::to_string(addr.port);
  int rc = getaddrinfo(addr.host.c_str(), port.c_str(), &hints, &res);
  if (rc != 0) {
    *error = fmt::format("cannot resolve '{}': {}", addr.host, gai_strerror(rc));
    return nullptr;
  }
  return res;
}

}  // namespace

namespace {

// Tries each address `addr` resolves to until `ready` succeeds on a socket for
// it; on failure says "cannot <verb> HOST:PORT: reason".
template <class Ready>
Socket first_ready(const HostPort& addr, bool passive, const char* verb, std::string* error,
                   Ready ready) {
  addrinfo* res = resolve(addr, passive, error);
  if (!res) return Socket();
  int last_errno = 0;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    Socket s(::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol));
    if (!s.valid()) continue;
    if (ready(s, ai)) {
      freeaddrinfo(res);
      return s;
    }
    last_errno = errno;
  }
  freeaddrinfo(res);
  *error =
      fmt::format("cannot {} {}:{}: {}", verb, addr.host, addr.port, std::strerror(last_errno));
  return Socket();
}

}  // namespace

namespace {

// connect(), bounded by `timeout` when it is above zero: the socket is
// non-blocking only for the wait.
bool connect_within(int fd, const sockaddr* to, socklen_t len, std::chrono::milliseconds timeout) {
  if (timeout.count() <= 0) return ::connect(fd, to, len) == 0;
  const int flags = fcntl(fd, F_GETFL);
  fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  bool ok = ::connect(fd, to, len) == 0;
  if (!ok && errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    int n;
    while ((n = ::poll(&p, 1, static_cast<int>(timeout.count()))) < 0 && errno == EINTR) {
    }
    int so_error = 0;
    socklen_t so_len = sizeof so_error;
    if (n == 0) errno = ETIMEDOUT;
    else if (n > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &so_len) == 0)
      ok = so_error == 0, errno = so_error;
  }
  fcntl(fd, F_SETFL, flags);
  return ok;
}

}  // namespace

Socket connect_tcp(const HostPort& addr, std::string* error, std::chrono::milliseconds timeout,
                   bool* refused) {
  bool tried = false, all_refused = true;
  Socket s = first_ready(addr, false, "connect to", error, [&](Socket& s, addrinfo* ai) {
    tried = true;
    if (!connect_within(s.fd(), ai->ai_addr, ai->ai_addrlen, timeout)) {
      all_refused = all_refused && errno == ECONNREFUSED;
      return false;
    }
    int one = 1;
    setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    keep_alive(s.fd());
    return true;
  });
  if (refused) *refused = !s.valid() && tried && all_refused;
  return s;
}

void keep_alive(int fd) {
  const int on = 1, idle = 30, interval = 10, count = 3;
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &interval, sizeof interval);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
}

Socket listen_tcp(const HostPort& addr, std::string* error) {
  return first_ready(addr, true, "listen on", error, [](Socket& s, addrinfo* ai) {
    int one = 1;
    setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    return ::bind(s.fd(), ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(s.fd(), 64) == 0;
  });
}

uint16_t bound_port(const Socket& s) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  if (getsockname(s.fd(), reinterpret_cast<sockaddr*>(&a), &len) != 0) return 0;
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in*>(&a)->sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6*>(&a)->sin6_port);
  return 0;
}

}  // namespace scuda
