#include "client/outbox.h"

#include <sys/prctl.h>

#include <thread>

#include "protocol/frame_io.h"

namespace scuda::client {

bool Outbox::hold(const protocol::FrameHeader& h, const void* head, size_t head_size,
                  const void* tail, size_t tail_size) {
  if (stopped_ || head_size + tail_size > kLargestHeld) return false;
  if (bytes_.empty()) {
    const Clock::time_point now = Clock::now();
    if (now - last_one_way_ >= kHoldFor) return false;
    if (!started_) {
      bytes_.reserve(kFull + kLargestHeld + protocol::kHeaderSize);
      std::thread([this] { run(); }).detach();  // the connection, and so this, is never freed
      started_ = true;
    }
    since_.store(now.time_since_epoch().count());
    begun_.fetch_add(1);
    if (idle_.load()) begun_.notify_one();
  }
  return protocol::append_frame(bytes_, h, head, head_size, tail, tail_size);
}

void Outbox::sent(bool one_way) {
  if (!bytes_.empty()) done_.store(begun_.load());
  bytes_.clear();
  last_one_way_ = one_way ? Clock::now() : Clock::time_point();
}

// No wake-up: the thread, if it runs at all (not in a child), may sleep
// until the process ends.
void Outbox::stop() {
  stopped_ = true;
  bytes_.clear();
}

// Sleeps until a batch begins, then until it is due, and sends it unless a
// call did. The lock is taken only then: a call waiting for its reply holds
// it, but has sent the batch first. A thread's timer slack (50 µs by
// default) would more than triple kHoldFor.
void Outbox::run() {
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  uint32_t seen = 0;
  for (;;) {
    idle_.store(true);
    begun_.wait(seen);
    idle_.store(false);
    seen = begun_.load();
    std::this_thread::sleep_until(Clock::time_point(Clock::duration(since_.load())) + kHoldFor);
    if (static_cast<int32_t>(done_.load() - seen) >= 0) continue;
    std::lock_guard lock(lock_);
    if (stopped_) return;
    if (static_cast<int32_t>(done_.load() - seen) < 0) flush_();
  }
}

}  // namespace scuda::client
