#include "k8s/health.h"

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include <future>

#include "common/server_request.h"
#include "protocol/ops.h"

namespace scuda::k8s {

Probe status_probe(const std::string& token) {
  return [token](const std::string& address, int* gpus, std::string* error) {
    std::vector<uint8_t> body;
    // Shorter than a status request's usual wait: a server this slow to
    // answer is no use to a pod about to start on it.
    if (!ask_server({address, protocol::kOpStatus, token, "the device plugin's status request",
                     std::chrono::seconds(5)},
                    &body, error))
      return false;
    // The GPU list is filled by the server's monitor shortly after it
    // starts, so an answer without one counts as answering.
    const auto status = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
    const bool listed = status.is_object() && status.contains("gpus") && status["gpus"].is_array();
    *gpus = listed ? static_cast<int>(status["gpus"].size()) : 0;
    return true;
  };
}

bool gpu_healthy(const ServerHealth& server, int gpu) {
  return server.answers && (server.gpus == 0 || gpu < server.gpus);
}

HealthMonitor::HealthMonitor(std::vector<std::string> addresses, Probe probe,
                             std::chrono::milliseconds interval)
    : addresses_(std::move(addresses)),
      probe_(std::move(probe)),
      interval_(interval),
      servers_(addresses_.size()) {}

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

std::vector<ServerHealth> HealthMonitor::servers() const {
  std::lock_guard lock(mutex_);
  return servers_;
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

// Every server is asked at once, outside the lock: a server that does not
// answer costs the round its connection timeout once, not once per server,
// and watchers read the last answers meanwhile.
void HealthMonitor::probe_all(bool first) {
  std::vector<std::string> errors(addresses_.size());
  std::vector<std::future<ServerHealth>> answers;
  for (size_t i = 0; i < addresses_.size(); ++i)
    answers.push_back(std::async(std::launch::async, [this, i, &errors] {
      ServerHealth now;
      now.answers = probe_(addresses_[i], &now.gpus, &errors[i]);
      return now;
    }));
  std::vector<ServerHealth> now;
  now.reserve(answers.size());
  for (std::future<ServerHealth>& answer : answers) now.push_back(answer.get());
  std::lock_guard lock(mutex_);
  for (size_t i = 0; i < addresses_.size(); ++i) {
    if (now[i] == servers_[i] && !first) continue;
    if (now[i].answers) spdlog::info("{} answers, listing {} GPUs", addresses_[i], now[i].gpus);
    else spdlog::warn("{} does not answer, its GPUs are unhealthy: {}", addresses_[i], errors[i]);
    servers_[i] = now[i];
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
