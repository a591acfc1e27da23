#include "server/listener/local_socket.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include <fmt/format.h>

namespace scuda::server {

namespace {

// sun_path starts with a NUL byte: the abstract namespace.
bool address_of(const std::string& name, sockaddr_un* a, socklen_t* len) {
  if (name.empty() || name.size() + 1 > sizeof a->sun_path) return false;
  *a = {};
  a->sun_family = AF_UNIX;
  std::memcpy(a->sun_path + 1, name.data(), name.size());
  *len = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
  return true;
}

template <class Ready>
Socket local_socket(const std::string& name, const char* verb, std::string* error, Ready ready) {
  sockaddr_un a;
  socklen_t len;
  if (!address_of(name, &a, &len)) {
    *error = fmt::format("'{}' cannot name a local socket", name);
    return Socket();
  }
  Socket s(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (s.valid() && ready(s, reinterpret_cast<sockaddr*>(&a), len)) return s;
  *error = fmt::format("cannot {} the local socket @{}: {}", verb, name, std::strerror(errno));
  return Socket();
}

}  // namespace

Socket listen_local(const std::string& name, std::string* error) {
  return local_socket(name, "listen on", error, [](Socket& s, sockaddr* a, socklen_t len) {
    return ::bind(s.fd(), a, len) == 0 && ::listen(s.fd(), 8) == 0;
  });
}

Socket connect_local(const std::string& name, std::string* error) {
  return local_socket(name, "connect to", error, [](Socket& s, sockaddr* a, socklen_t len) {
    return ::connect(s.fd(), a, len) == 0;
  });
}

bool peer_is_same_user(const Socket& s) {
  ucred c{};
  socklen_t len = sizeof c;
  return getsockopt(s.fd(), SOL_SOCKET, SO_PEERCRED, &c, &len) == 0 && c.uid == geteuid();
}

bool send_with_fd(Socket& s, const std::string& data, int fd) {
  iovec iov{const_cast<char*>(data.data()), data.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fd)] = {};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fd);
  std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  ssize_t n;
  do n = ::sendmsg(s.fd(), &m, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n == static_cast<ssize_t>(data.size());
}

Socket receive_with_fd(Socket& s, size_t max, std::string* data) {
  std::string buf(max, '\0');
  iovec iov{buf.data(), buf.size()};
  // Room for a few descriptors, so that extra ones arrive here to be closed.
  alignas(cmsghdr) char control[CMSG_SPACE(4 * sizeof(int))] = {};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = control;
  m.msg_controllen = sizeof control;
  ssize_t n;
  do n = ::recvmsg(s.fd(), &m, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  Socket first;
  for (cmsghdr* c = n < 0 ? nullptr : CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof fd, sizeof fd);
      Socket got(fd);  // closed at the end of the loop unless kept
      if (!first.valid()) first = std::move(got);
    }
  }
  if (n < 0 || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) return Socket();
  buf.resize(static_cast<size_t>(n));
  *data = std::move(buf);
  return first;
}

}  // namespace scuda::server
