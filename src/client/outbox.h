// One-way requests held back so that several leave in one system call
// (docs/protocol.md, "Batching"). A one-way frame is held when another left
// less than kHoldFor before it (a burst: a loop of launches); a lone one goes
// out at once, since holding it saves nothing. The connection sends what is
// held ahead of its next request that wants a reply, in the same system
// call, and as soon as kFull bytes are held; the outbox's thread sends it
// kHoldFor after the first frame was held, so that launches followed by long
// host work do not leave the device idle. Callers make no system call to
// arm that thread unless it has gone idle (a timer costs more than the
// write it would save, on virtual machines most of all).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <vector>

#include "protocol/frame.h"

namespace scuda::client {

class Outbox {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr size_t kFull = 64u << 10;
  // Larger payloads (bulk copies) are sent from the caller's memory, not
  // copied in.
  static constexpr size_t kLargestHeld = 16u << 10;
  static constexpr std::chrono::microseconds kHoldFor{20};

  // `lock` is the connection's: every member is called with it held, and the
  // thread takes it to call `flush`, which sends held() and then calls sent().
  Outbox(std::mutex& lock, std::function<void()> flush) : lock_(lock), flush_(std::move(flush)) {}
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  // Copies the one-way frame in; false, holding nothing, when it should go
  // out now (a lone frame, a large payload, or holding has stopped).
  bool hold(const protocol::FrameHeader& h, const void* head, size_t head_size, const void* tail,
            size_t tail_size);
  bool full() const { return bytes_.size() >= kFull; }
  std::span<const uint8_t> held() const { return bytes_; }
  // held() and possibly one frame after it were written (or the connection
  // is lost); `one_way` says whether that frame (or the last held) was.
  void sent(bool one_way);
  // Holds nothing from now on: the process is exiting, or is a child after
  // fork (whose connection is its parent's, and has no thread). Drops what
  // is held.
  void stop();

 private:
  void run();

  std::mutex& lock_;
  std::function<void()> flush_;
  std::vector<uint8_t> bytes_;
  Clock::time_point last_one_way_;  // when a one-way frame last left
  bool started_ = false;
  bool stopped_ = false;
  // Shared with the thread without the lock. Batches are numbered from 1;
  // since_ is when the latest began.
  std::atomic<uint32_t> begun_{0};
  std::atomic<uint32_t> done_{0};
  std::atomic<Clock::rep> since_{0};
  std::atomic<bool> idle_{false};
};

}  // namespace scuda::client
