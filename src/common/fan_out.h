// Threads that work on one job at a time, each on a part of its own: run()
// hands the job to the first `count` of them and returns once each has done
// its part. The lanes' threads are these, on both sides (docs/protocol.md,
// "Lanes"). The job itself is the owner's to keep; what a thread reads of
// it, the owner wrote before run().
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>

namespace scuda {

class FanOut {
 public:
  // Starts `threads` threads, never stopped: they last until the process
  // exits, and so must the FanOut and what `part` uses.
  FanOut(size_t threads, std::function<void(size_t index)> part);
  FanOut(const FanOut&) = delete;
  FanOut& operator=(const FanOut&) = delete;

  void run(size_t count);

 private:
  void serve(size_t index);

  std::function<void(size_t)> part_;
  std::mutex mu_;
  std::condition_variable cv_;  // threads wait here for a job, run() for the threads
  uint64_t generation_ = 0;     // jobs handed out so far
  size_t count_ = 0;            // threads the current job takes
  size_t busy_ = 0;             // of those, the ones not done yet
};

}  // namespace scuda
