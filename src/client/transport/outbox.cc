#include "client/transport/outbox.h"

#include <sys/prctl.h>

#include <thread>

#include "protocol/frame_io.h"

namespace scuda::client {

bool Outbox::hold(const protocol::FrameHeader& h, const void* head, size_t head_size,
                  const void* tail, size_t tail_size) {
  if (stopped_ || head_size + tail_size > kLargestHeld) return false;
  if (bytes_.empty()) {
    if (!started_) {
      bytes_.reserve(kFull + kLargestHeld + protocol::kHeaderSize);
      std::thread([this] { run(); }).detach();  // the connection, and so this, is never freed
      started_ = true;
    }
    since_.store(Clock::now().time_since_epoch().count());
    begun_.fetch_add(1);
    if (idle_.load()) begun_.notify_one();
  }
  return protocol::append_frame(bytes_, h, head, head_size, tail, tail_size);
}

// No wake-up: the thread, if it runs at all (not in a child), may sleep
// until the process ends.
void Outbox::stop() {
  stopped_ = true;
  bytes_.clear();
}

// Yields the core between looks, so that on a busy machine the program's
// own threads run first. A batch that begins after idle_ is set wakes the
// thread: hold() reads idle_ after counting the batch.
void Outbox::wait_for_batch(uint32_t* seen) {
  const uint32_t last = *seen;
  const Clock::time_point until = Clock::now() + kPollFor;
  while (begun_.load() == last && Clock::now() < until) std::this_thread::yield();
  if (begun_.load() == last) {
    idle_.store(true);
    begun_.wait(last);
    idle_.store(false);
  }
  *seen = begun_.load();
}

bool Outbox::send_held() {
  std::unique_lock lock(lock_);
  if (stopped_) return false;
  if (bytes_.empty()) return true;  // a call sent it
  std::unique_lock write(write_mu_);
  std::swap(bytes_, sending_);
  lock.unlock();
  const bool ok = write_(sending_);
  sending_.clear();
  write.unlock();
  if (!ok) {
    lock.lock();
    failed_();
  }
  return ok;
}

// A thread's timer slack (50 µs by default) would more than triple kHoldFor.
void Outbox::run() {
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  uint32_t seen = 0;
  do {
    wait_for_batch(&seen);
    std::this_thread::sleep_until(Clock::time_point(Clock::duration(since_.load())) + kHoldFor);
  } while (send_held());
}

}  // namespace scuda::client
