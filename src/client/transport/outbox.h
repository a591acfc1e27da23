// One-way requests, held and written by the outbox's own thread, so that the
// program's threads make no system call for them (docs/protocol.md,
// "Batching"). An eager PyTorch step issues operations so close together that
// a write by the issuing thread for each costs a share of the step (figures:
// docs/bench/training.md, "Figures cited by the code"). The thread sends what is held
// kHoldFor after the first frame of it, so that a burst leaves in few
// writes, and writes outside the connection's lock, so that the program
// goes on holding frames meanwhile. It polls for kPollFor after each write
// before it sleeps: a program that issues steadily never pays for waking it.
// The connection writes what is held ahead of a request that wants a reply,
// in the same system call, and once kFull bytes are held.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <vector>

#include "common/lock_order.h"
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
  static constexpr std::chrono::microseconds kPollFor{200};

  // Writes bytes to the connection's socket; false once it is lost.
  using Write = std::function<bool(std::span<const uint8_t>)>;
  // `lock` is the connection's: every member is called with it held. The
  // thread takes it to take what is held, and calls `failed` with it held
  // when its write fails.
  Outbox(RankedMutex& lock, Write write, std::function<void()> failed)
      : lock_(lock), write_(std::move(write)), failed_(std::move(failed)) {}
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  // Copies the one-way frame in; false, holding nothing, when it should go
  // out now (a large payload, or holding has stopped).
  bool hold(const protocol::FrameHeader& h, const void* head, size_t head_size, const void* tail,
            size_t tail_size);
  bool full() const { return bytes_.size() >= kFull; }
  std::span<const uint8_t> held() const { return bytes_; }
  // Held by every write to the socket, the thread's too. The connection
  // takes it with its own lock held, so that writes keep their order.
  RankedMutex& write_lock() { return write_mu_; }
  // held() was written (or the connection is lost).
  void sent() { bytes_.clear(); }
  // Holds nothing from now on: the process is exiting, or is a child after
  // fork (whose connection is its parent's, and has no thread). Drops what
  // is held.
  void stop();

 private:
  void run();
  // Returns once a batch has begun since `seen`, updating it.
  void wait_for_batch(uint32_t* seen);
  // Writes what is held, if anything; false once the write fails.
  bool send_held();

  RankedMutex& lock_;
  Write write_;
  std::function<void()> failed_;
  RankedMutex write_mu_{LockRank::kSocketWrite, "Outbox::write_mu_"};
  std::vector<uint8_t> bytes_;
  std::vector<uint8_t> sending_;  // the thread's, under write_mu_
  bool started_ = false;
  bool stopped_ = false;
  // Shared with the thread without the lock. Batches are numbered from 1;
  // since_ is when the latest began.
  std::atomic<uint32_t> begun_{0};
  std::atomic<Clock::rep> since_{0};
  std::atomic<bool> idle_{false};
};

}  // namespace scuda::client
