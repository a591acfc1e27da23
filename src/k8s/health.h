// Whether each server of the pool answers: a thread asks every server for
// its status at an interval, and watchers wait for a change.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace scuda::k8s {

// Asks the server at `address` whether it answers, and sets *gpus to how
// many GPUs it has (0: it did not say); false with *error.
using Probe = std::function<bool(const std::string& address, int* gpus, std::string* error)>;

// A probe that sends `scuda status`'s request with `token` (may be empty)
// and counts the GPUs of its answer.
Probe status_probe(const std::string& token);

// A server's last answer.
struct ServerHealth {
  bool answers = false;
  int gpus = 0;  // 0: not known
  bool operator==(const ServerHealth&) const = default;
};

// Whether GPU `gpu` of a server is usable: the server answers, and has a
// GPU of that index or has not said how many it has.
bool gpu_healthy(const ServerHealth& server, int gpu);

class HealthMonitor {
 public:
  HealthMonitor(std::vector<std::string> addresses, Probe probe,
                std::chrono::milliseconds interval);
  ~HealthMonitor();
  HealthMonitor(const HealthMonitor&) = delete;
  HealthMonitor& operator=(const HealthMonitor&) = delete;

  // Probes every server once, then keeps probing on a thread of its own.
  void start();
  // Ends the thread and wakes every watcher.
  void stop();

  // Each server's last answer, in the order of the addresses.
  std::vector<ServerHealth> servers() const;
  // A number that changes whenever servers() does.
  uint64_t generation() const;
  // Waits until generation() differs from `seen`, stop() is called or
  // `limit` passes; the generation then.
  uint64_t wait_for_change(uint64_t seen, std::chrono::milliseconds limit) const;

 private:
  // Asks every server; `first` logs every answer, later rounds only changes.
  void probe_all(bool first);
  void run();

  const std::vector<std::string> addresses_;
  const Probe probe_;
  const std::chrono::milliseconds interval_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  std::vector<ServerHealth> servers_;
  uint64_t generation_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace scuda::k8s
