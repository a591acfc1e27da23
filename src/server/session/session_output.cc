#include "server/session/session_output.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cstdio>
#include <thread>
#include <utility>

namespace scuda::server {

bool SessionOutput::start() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return false;
  std::fflush(stdout);
  if (dup2(fds[1], STDOUT_FILENO) < 0 || fcntl(fds[0], F_SETFL, O_NONBLOCK) != 0) {
    close(fds[0]);
    close(fds[1]);
    return false;
  }
  close(fds[1]);
  fd_ = fds[0];
  std::thread([this] {
    pollfd p{fd_, POLLIN, 0};
    while (poll(&p, 1, -1) >= 0) {
      std::lock_guard lock(mu_);
      drain();
    }
  }).detach();
  return true;
}

std::string SessionOutput::take() {
  if (fd_ < 0) return {};
  std::fflush(stdout);  // in case the driver printed through stdio
  std::lock_guard lock(mu_);
  drain();
  return std::exchange(buffered_, {});
}

void SessionOutput::drain() {
  char buf[65536];
  ssize_t n;
  while ((n = read(fd_, buf, sizeof buf)) > 0) buffered_.append(buf, static_cast<size_t>(n));
}

}  // namespace scuda::server
