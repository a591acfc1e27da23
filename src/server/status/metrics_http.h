// `scuda server --metrics HOST:PORT`: a plain HTTP responder on a thread of
// the listener that answers GET /metrics with the session table in
// Prometheus's text format. One connection at a time, each bounded in time,
// so that a slow scraper delays only other scrapers.
#pragma once

#include <cstdint>
#include <string>
#include <thread>

#include "common/socket.h"
#include "server/status/session_table.h"

namespace scuda::server {

class MetricsServer {
 public:
  MetricsServer() = default;
  ~MetricsServer() { stop(); }
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Listens on `address` and starts answering; false with *error if it
  // cannot listen there.
  bool start(const std::string& address, const SessionTable* table, std::string* error);
  // The port it listens on (0 before start).
  uint16_t port() const { return port_; }
  // Stops the thread and closes the socket.
  void stop();
  // In a forked child, which has no such thread: closes the inherited
  // sockets without waiting for it.
  void forget();

 private:
  void serve();

  Socket listener_;
  int wake_[2] = {-1, -1};  // a byte on wake_[1] stops serve()
  const SessionTable* table_ = nullptr;
  uint16_t port_ = 0;
  std::thread thread_;
};

}  // namespace scuda::server
