#include "server/listener/listener.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <unordered_set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "protocol/frame_io.h"
#include "server/listener/admission_queue.h"
#include "server/listener/driver_probe.h"
#include "server/session/dispatch.h"
#include "server/status/gpu_monitor.h"
#include "server/status/metrics_http.h"
#include "server/status/session_table.h"

namespace scuda::server {

namespace {

// The session table: mapped at start, before any child is forked.
SessionTable* g_table = nullptr;

void reap(std::unordered_set<pid_t>* sessions) {
  int status = 0;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    sessions->erase(pid);
    g_table->release(pid);
    if (WIFSIGNALED(status)) spdlog::warn("session {} died of signal {}", pid, WTERMSIG(status));
    else if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
      spdlog::info("session {} ended with exit code {}", pid, WEXITSTATUS(status));
  }
}

// The signal that asked the listener to stop, or 0.
volatile sig_atomic_t g_stop = 0;

void on_stop(int sig) { g_stop = sig; }

// Set by SIGHUP: the tokens file is read again.
volatile sig_atomic_t g_reload = 0;

void on_reload(int) { g_reload = 1; }

void on_child(int) {}

// The signals the listener waits for: a stop signal begins the drain, and
// an ended session is reaped at once. They stay blocked except inside the
// wait (ppoll), so that none arrives between a check of g_stop and the
// wait, where it would be missed until the next client.
sigset_t g_unblocked;  // the mask the process started with

void catch_signals() {
  struct sigaction a {};
  a.sa_handler = on_stop;
  sigemptyset(&a.sa_mask);
  sigaction(SIGTERM, &a, nullptr);
  sigaction(SIGINT, &a, nullptr);
  a.sa_handler = on_child;
  sigaction(SIGCHLD, &a, nullptr);
  a.sa_handler = on_reload;
  sigaction(SIGHUP, &a, nullptr);
  sigset_t waited;
  sigemptyset(&waited);
  sigaddset(&waited, SIGTERM);
  sigaddset(&waited, SIGINT);
  sigaddset(&waited, SIGCHLD);
  sigaddset(&waited, SIGHUP);
  sigprocmask(SIG_BLOCK, &waited, &g_unblocked);
}

// Lets the signals in again: in the drain (which polls g_stop) and in a
// forked session.
void unblock_signals() { sigprocmask(SIG_SETMASK, &g_unblocked, nullptr); }

// Waits until a client knocks, a session queues or a signal comes; true
// when a client knocks.
bool wait_for_client(const Socket& listener) {
  pollfd p[2] = {{listener.fd(), POLLIN, 0}, {g_table->queue_event, POLLIN, 0}};
  if (ppoll(p, 2, nullptr, &g_unblocked) <= 0) return false;
  uint64_t events;
  if (p[1].revents & POLLIN) [[maybe_unused]]
    const ssize_t n = read(g_table->queue_event, &events, sizeof events);
  return p[0].revents & POLLIN;
}

// SIGHUP: the tokens file again. Sessions keep the token they came with; a
// file that does not read keeps the tokens as they were.
void reload_tokens(const std::string& path, Tokens* tokens) {
  g_reload = 0;
  if (path.empty()) {
    spdlog::warn("SIGHUP: no tokens file to read again (the server was started without --tokens)");
    return;
  }
  Tokens fresh;
  std::string error;
  if (!Tokens::load(path, &fresh, &error)) {
    spdlog::error("SIGHUP: kept the tokens as they were: {}", error);
    return;
  }
  *tokens = std::move(fresh);
  spdlog::info("SIGHUP: read {} tokens from {}; running sessions go on", tokens->list().size(),
               path);
}

// Waits until every session in `sessions` has ended, at most until
// `deadline` or another stop signal; true if they all ended.
bool wait_for_sessions(std::unordered_set<pid_t>* sessions,
                       std::chrono::steady_clock::time_point deadline) {
  while (!sessions->empty() && !g_stop && std::chrono::steady_clock::now() < deadline) {
    usleep(20000);
    reap(sessions);
  }
  return sessions->empty();
}

// Sends `sig` to every session still running.
void signal_sessions(const std::unordered_set<pid_t>& sessions, int sig) {
  for (pid_t pid : sessions) kill(pid, sig);
}

// After a stop signal: no new sessions; the running ones get `limit` to
// finish, then SIGTERM, then SIGKILL.
int drain(Socket* listener, std::unordered_set<pid_t>* sessions, std::chrono::seconds limit) {
  listener->close();
  g_table->draining.store(1);
  unblock_signals();
  reap(sessions);
  spdlog::info(
      "stopping: accepting no more clients; {} sessions running, given up to {} s to "
      "finish (signal again to end them now)",
      sessions->size(), limit.count());
  g_stop = 0;
  if (!wait_for_sessions(sessions, std::chrono::steady_clock::now() + limit)) {
    spdlog::warn("ending {} sessions still running; their clients get an error", sessions->size());
    signal_sessions(*sessions, SIGTERM);
    g_stop = 0;
    if (!wait_for_sessions(sessions, std::chrono::steady_clock::now() + std::chrono::seconds(2)))
      signal_sessions(*sessions, SIGKILL);
  }
  spdlog::info("scuda server stopped");
  return 0;
}

// "ADDRESS:PORT" of the client at the other end of `fd`, for `scuda status`.
std::string peer_name(int fd) {
  sockaddr_storage a{};
  socklen_t len = sizeof a;
  char host[INET6_ADDRSTRLEN] = "?";
  if (getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) return "?";
  if (a.ss_family == AF_INET) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&a);
    inet_ntop(AF_INET, &v4->sin_addr, host, sizeof host);
    return std::string(host) + ":" + std::to_string(ntohs(v4->sin_port));
  }
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&a);
  inet_ntop(AF_INET6, &v6->sin6_addr, host, sizeof host);
  return "[" + std::string(host) + "]:" + std::to_string(ntohs(v6->sin6_port));
}

// The metrics endpoint, when asked for; false if it cannot listen.
bool start_metrics(const ListenerOptions& options, MetricsServer* metrics) {
  if (options.metrics.empty()) return true;
  std::string error;
  if (!metrics->start(options.metrics, g_table, &error)) {
    spdlog::error("--metrics {}: {}", options.metrics, error);
    return false;
  }
  std::printf("scuda metrics at http://%s/metrics\n",
              (options.metrics.substr(0, options.metrics.rfind(':')) + ":" +
               std::to_string(metrics->port()))
                  .c_str());
  return true;
}

[[noreturn]] void run_session(Socket client, const SessionOptions& options) {
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  signal(SIGCHLD, SIG_DFL);
  // A Ctrl-C at the server's terminal reaches the whole process group: the
  // listener decides when sessions end.
  signal(SIGINT, SIG_IGN);
  signal(SIGTERM, SIG_DFL);
  Session session(std::move(client), options);
  _exit(session.run());
}

// The next client, its socket set up for a session; invalid when it went away.
Socket accept_client(const Socket& listener) {
  Socket client(accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK));
  if (!client.valid()) {
    if (errno != EAGAIN && errno != EINTR) spdlog::warn("accept failed: {}", std::strerror(errno));
    return client;
  }
  // Accepted non-blocking only so that a client gone before accept()
  // cannot block the listener; sessions use blocking sockets.
  fcntl(client.fd(), F_SETFL, fcntl(client.fd(), F_GETFL) & ~O_NONBLOCK);
  // Replies are small and latency-bound: never hold one back for Nagle.
  int one = 1;
  setsockopt(client.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  keep_alive(client.fd());
  return client;
}

// Forks the client's process (docs/architecture.md, "Tokens and the
// admission queue"): it authenticates, and then waits in the queue if the
// server or its token is at its limit. Every connection takes a slot of the
// session table, which bounds the processes a server holds.
void start_session(Socket client, SessionOptions session, Socket& listener, MetricsServer& metrics,
                   std::unordered_set<pid_t>* sessions) {
  session.slot = g_table->take(peer_name(client.fd()));
  if (!session.slot) {
    protocol::write_error(
        client, 0,
        fmt::format("the server holds {} connections, its most; try again later", kSessionSlots),
        protocol::kErrorBusy);
    return;
  }
  pid_t pid = fork();
  if (pid == 0) {
    listener.close();
    metrics.forget();
    unblock_signals();
    run_session(std::move(client), session);
  }
  if (pid < 0) {
    spdlog::error("fork failed: {}", std::strerror(errno));
    g_table->release(session.slot);
    return;
  }
  session.slot->pid.store(pid);
  sessions->insert(pid);
  spdlog::info("session {} started for {}", pid, session.slot->peer);
}

}  // namespace

int serve(const ListenerOptions& options) {
  if (std::vector<uint32_t> twice = ops_registered_twice(); !twice.empty()) {
    spdlog::error(
        "this scuda build is broken: ops {} have two handlers each (server/session/dispatch.cc)",
        fmt::join(twice, ", "));
    return 1;
  }
  HostPort addr;
  std::string error;
  if (!parse_host_port(options.listen, &addr, &error, true)) {
    spdlog::error("{}", error);
    return 2;
  }
  std::string driver;
  SessionOptions session = options.session;
  if (!probe_driver(session.driver_path, &driver, &session.offered_gpus, &error)) {
    spdlog::error("no usable GPU driver, so nothing to serve: {}", error);
    return 1;
  }
  g_table = SessionTable::create(&error);
  if (!g_table) {
    spdlog::error("{}", error);
    return 1;
  }
  g_table->queue_event = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  // Before the sockets are open, so that the monitor holds none of them.
  if (start_gpu_monitor(options.nvml_path, options.session.driver_path, session.offered_gpus,
                        g_table) < 0)
    spdlog::warn("no GPU monitor (fork failed): status and metrics show no GPU figures");
  Socket listener = listen_tcp(addr, &error);
  if (!listener.valid()) {
    spdlog::error("{}", error);
    return 1;
  }
  signal(SIGPIPE, SIG_IGN);
  catch_signals();
  // Always said, on stdout: with port 0 it is the only way to learn the port.
  // Whether connections are plain TCP is said too: then the token crosses
  // in the clear.
  const std::string host =
      addr.host.find(':') != std::string::npos ? "[" + addr.host + "]" : addr.host;
  std::printf("scuda server listening on %s:%u (TLS %s); %s\n", host.c_str(),
              unsigned{bound_port(listener)}, options.session.tls ? "on" : "off", driver.c_str());
  // After catch_signals: its thread inherits the blocked signals.
  MetricsServer metrics;
  if (!start_metrics(options, &metrics)) return 1;
  std::fflush(stdout);
  std::unordered_set<pid_t> sessions;
  session.max_sessions = options.max_sessions;
  session.table = g_table;
  for (;;) {
    const bool knocked = wait_for_client(listener);
    reap(&sessions);
    if (g_reload) reload_tokens(options.tokens_file, &session.tokens);
    admit_waiting(g_table, {options.max_sessions, &session.tokens});
    if (g_stop) return drain(&listener, &sessions, options.drain_timeout);
    if (!knocked) continue;
    Socket client = accept_client(listener);
    if (client.valid()) start_session(std::move(client), session, listener, metrics, &sessions);
  }
}

}  // namespace scuda::server
