#include "k8s/health.h"

#include <spdlog/spdlog.h>

#include "cli/server_request.h"
#include "protocol/ops.h"

namespace scuda::k8s {

Probe status_probe(const std::string& token) {
  return [token](const std::string& address, std::string* error) {
    std::vector<uint8_t> body;
    // Shorter than a status request's usual wait: a server this slow to
    // answer is no use to a pod about to start on it.
    return cli::ask_server({address, protocol::kOpStatus, token,
                            "the device plugin's status request", std::chrono::seconds(5)},
                           &body, error);
  };
}

HealthMonitor::HealthMonitor(std::vector<std::string> addresses, Probe probe,
                             std::chrono::milliseconds interval)
    : addresses_(std::move(addresses)),
      probe_(std::move(probe)),
      interval_(interval),
      healthy_(addresses_.size(), false) {}

HealthMonitor::~HealthMonitor() { stop(); }

void HealthMonitor::start() {
  probe_all(true);
  thread_ = std::thread([this] { run(); });
}

void HealthMonitor::stop() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::vector<bool> HealthMonitor::healthy() const {
  std::lock_guard lock(mutex_);
  return healthy_;
}

uint64_t HealthMonitor::generation() const {
  std::lock_guard lock(mutex_);
  return generation_;
}

uint64_t HealthMonitor::wait_for_change(uint64_t seen, std::chrono::milliseconds limit) const {
  std::unique_lock lock(mutex_);
  changed_.wait_for(lock, limit, [&] { return generation_ != seen || stopping_; });
  return generation_;
}

// Servers are asked one after another, outside the lock, so watchers read
// the last answers while a slow server keeps the round waiting.
void HealthMonitor::probe_all(bool first) {
  for (size_t i = 0; i < addresses_.size(); ++i) {
    std::string error;
    const bool answers = probe_(addresses_[i], &error);
    std::lock_guard lock(mutex_);
    if (answers == healthy_[i] && !first) continue;
    if (answers) spdlog::info("{} answers: its GPUs are healthy", addresses_[i]);
    else spdlog::warn("{} does not answer, its GPUs are unhealthy: {}", addresses_[i], error);
    healthy_[i] = answers;
    ++generation_;
  }
  changed_.notify_all();
}

void HealthMonitor::run() {
  std::unique_lock lock(mutex_);
  while (!changed_.wait_for(lock, interval_, [&] { return stopping_; })) {
    lock.unlock();
    probe_all(false);
    lock.lock();
  }
}

}  // namespace scuda::k8s
