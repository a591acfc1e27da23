#include "server/status/metrics_http.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/format.h>

#include "server/status/metrics_text.h"
#include "server/status/server_state.h"

namespace scuda::server {

namespace {

constexpr size_t kMaxRequest = 8192;
constexpr int kRequestTimeoutMs = 2000;

// The request's head (up to its blank line); "" if none came in time.
std::string read_head(Socket& client) {
  std::string head;
  char buf[1024];
  while (head.find("\r\n\r\n") == std::string::npos && head.size() < kMaxRequest) {
    pollfd p{client.fd(), POLLIN, 0};
    if (poll(&p, 1, kRequestTimeoutMs) <= 0) return "";
    const ssize_t n = recv(client.fd(), buf, sizeof buf, 0);
    if (n <= 0) return "";
    head.append(buf, static_cast<size_t>(n));
  }
  return head;
}

std::string response(const std::string& status, const std::string& type, const std::string& body) {
  return fmt::format(
      "HTTP/1.1 {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n"
      "Connection: close\r\n\r\n{}",
      status, type, body.size(), body);
}

// The answer to the request whose head is `head`.
std::string answer(const std::string& head, const SessionTable& table) {
  const std::string line = head.substr(0, head.find("\r\n"));
  if (line.rfind("GET /metrics ", 0) == 0 || line.rfind("GET /metrics?", 0) == 0)
    return response("200 OK", "text/plain; version=0.0.4; charset=utf-8",
                    metrics_text(read_state(table)));
  if (line.rfind("GET ", 0) != 0)
    return response("405 Method Not Allowed", "text/plain", "only GET is served\n");
  return response("404 Not Found", "text/plain", "scuda serves its metrics at /metrics\n");
}

}  // namespace

bool MetricsServer::start(const std::string& address, const SessionTable* table,
                          std::string* error) {
  HostPort hp;
  if (!parse_host_port(address, &hp, error, true)) return false;
  listener_ = listen_tcp(hp, error);
  if (!listener_.valid()) return false;
  if (pipe2(wake_, O_CLOEXEC) != 0) {
    *error = "cannot make a pipe for the metrics thread";
    return false;
  }
  table_ = table;
  port_ = bound_port(listener_);
  thread_ = std::thread([this] { serve(); });
  return true;
}

// Runs with the signals the listener waits for blocked (it starts after
// they are), so that they reach the listener's wait and not this thread.
void MetricsServer::serve() {
  for (;;) {
    pollfd p[2] = {{listener_.fd(), POLLIN, 0}, {wake_[0], POLLIN, 0}};
    if (poll(p, 2, -1) < 0) continue;
    if (p[1].revents) return;
    Socket client(accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC));
    if (!client.valid()) continue;
    const std::string head = read_head(client);
    if (head.empty()) continue;
    const std::string reply = answer(head, *table_);
    client.write_all(reply.data(), reply.size());
  }
}

void MetricsServer::stop() {
  if (thread_.joinable()) {
    [[maybe_unused]] const ssize_t n = write(wake_[1], "x", 1);
    thread_.join();
  }
  forget();
}

void MetricsServer::forget() {
  listener_.close();
  for (int& fd : wake_) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

}  // namespace scuda::server
