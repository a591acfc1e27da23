#include "common/fan_out.h"

#include <thread>

namespace scuda {

FanOut::FanOut(size_t threads, std::function<void(size_t index)> part) : part_(std::move(part)) {
  for (size_t i = 0; i < threads; ++i) std::thread([this, i] { serve(i); }).detach();
}

void FanOut::run(size_t count) {
  std::unique_lock lock(mu_);
  ++generation_;
  count_ = busy_ = count;
  cv_.notify_all();
  cv_.wait(lock, [&] { return busy_ == 0; });
}

// A thread that sleeps through a job it has no part in may wake to a later
// one: it reads the generation and the count together.
void FanOut::serve(size_t index) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return generation_ != seen && index < count_; });
      seen = generation_;
    }
    part_(index);
    std::lock_guard lock(mu_);
    if (--busy_ == 0) cv_.notify_all();
  }
}

}  // namespace scuda
