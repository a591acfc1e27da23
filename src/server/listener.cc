#include "server/listener.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unordered_set>

#include <spdlog/spdlog.h>

#include "protocol/frame_io.h"
#include "server/driver_probe.h"

namespace scuda::server {

namespace {

void reap(std::unordered_set<pid_t>* sessions) {
  int status = 0;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    sessions->erase(pid);
    if (WIFSIGNALED(status))
      spdlog::warn("session {} died of signal {}", pid, WTERMSIG(status));
  }
}

// Connections past the limit get a process only to join a session's
// callback channel, and only this many at once.
constexpr int kJoinsPastTheLimit = 4;

[[noreturn]] void run_session(Socket client, const SessionOptions& options) {
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  signal(SIGCHLD, SIG_DFL);
  Session session(std::move(client), options);
  _exit(session.run());
}

}  // namespace

int serve(const ListenerOptions& options) {
  HostPort addr;
  std::string error;
  if (!parse_host_port(options.listen, &addr, &error, true)) {
    spdlog::error("{}", error);
    return 2;
  }
  std::string driver;
  if (!probe_driver(options.session.driver_path, &driver, &error)) {
    spdlog::error("no usable GPU driver, so nothing to serve: {}", error);
    return 1;
  }
  Socket listener = listen_tcp(addr, &error);
  if (!listener.valid()) {
    spdlog::error("{}", error);
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  // Always said, on stdout: with port 0 it is the only way to learn the port.
  const std::string host = addr.host.find(':') != std::string::npos ? "[" + addr.host + "]"
                                                                       : addr.host;
  std::printf("scuda server listening on %s:%u (%s)\n", host.c_str(),
              unsigned{bound_port(listener)}, driver.c_str());
  std::fflush(stdout);
  std::unordered_set<pid_t> sessions;
  for (;;) {
    Socket client(accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC));
    reap(&sessions);
    if (!client.valid()) {
      if (errno != EINTR) spdlog::warn("accept failed: {}", std::strerror(errno));
      continue;
    }
    // Replies are small and latency-bound: never hold one back for Nagle.
    int one = 1;
    setsockopt(client.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    const int live = static_cast<int>(sessions.size());
    if (options.max_sessions > 0 && live >= options.max_sessions + kJoinsPastTheLimit) {
      protocol::write_error(client, 0, at_limit_message(options.max_sessions));
      continue;
    }
    SessionOptions session = options.session;
    if (options.max_sessions > 0 && live >= options.max_sessions)
      session.full_at = options.max_sessions;
    pid_t pid = fork();
    if (pid == 0) {
      listener.close();
      run_session(std::move(client), session);
    }
    if (pid < 0) {
      spdlog::error("fork failed: {}", std::strerror(errno));
      continue;
    }
    sessions.insert(pid);
    spdlog::info("session {} started", pid);
  }
}

}  // namespace scuda::server
