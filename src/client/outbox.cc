#include "client/outbox.h"

#include <sys/prctl.h>

#include <thread>

#include "protocol/frame_io.h"

namespace scuda::client {

bool Outbox::hold(const protocol::FrameHeader& h, const void* head, size_t head_size,
                  const void* tail, size_t tail_size) {
  if (stopped_ || head_size + tail_size > kLargestHeld) return false;
  if (bytes_.empty()) {
    since_ = std::chrono::steady_clock::now();
    if (idle_) wake_.notify_one();
  }
  if (!started_) {
    bytes_.reserve(kFull + kLargestHeld + protocol::kHeaderSize);
    std::thread([this] { run(); }).detach();  // the connection, and so this, is never freed
    started_ = true;
  }
  return protocol::append_frame(bytes_, h, head, head_size, tail, tail_size);
}

// No notify: the thread, if it runs at all (not in a child), stops at its
// next wake-up, and an idle one may sleep until the process ends.
void Outbox::stop() {
  stopped_ = true;
  bytes_.clear();
}

// A thread sleeps longer than asked by its timer slack (50 µs by default),
// which would more than triple kHoldFor.
void Outbox::run() {
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  std::unique_lock lock(lock_);
  while (!stopped_) {
    if (bytes_.empty()) {
      idle_ = true;
      wake_.wait(lock);
      idle_ = false;
    } else if (const auto due = since_ + kHoldFor; std::chrono::steady_clock::now() < due) {
      wake_.wait_until(lock, due);
    } else {
      flush_();
    }
  }
}

}  // namespace scuda::client
