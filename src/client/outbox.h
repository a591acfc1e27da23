// One-way requests held back so that several leave in one system call
// (docs/protocol.md, "Batching"). The connection sends what is held ahead
// of its next request that wants a reply, in the same system call, and as
// soon as kFull bytes are held; the outbox's thread sends it kHoldFor after
// the first frame was held, so that a lone launch followed by long host work
// does not leave the device idle.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <vector>

#include "protocol/frame.h"

namespace scuda::client {

class Outbox {
 public:
  static constexpr size_t kFull = 64u << 10;
  // Larger payloads (bulk copies) are sent from the caller's memory, not
  // copied in.
  static constexpr size_t kLargestHeld = 16u << 10;
  static constexpr std::chrono::microseconds kHoldFor{20};

  // `lock` is the connection's: every member is called with it held, and the
  // thread takes it to call `flush`, which sends held() and empties the
  // outbox whether or not the sending worked.
  Outbox(std::mutex& lock, std::function<void()> flush) : lock_(lock), flush_(std::move(flush)) {}
  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;

  // Copies the frame in; false, holding nothing, when it should go out now
  // (a large payload, or holding has stopped).
  bool hold(const protocol::FrameHeader& h, const void* head, size_t head_size, const void* tail,
            size_t tail_size);
  bool full() const { return bytes_.size() >= kFull; }
  std::span<const uint8_t> held() const { return bytes_; }
  void clear() { bytes_.clear(); }
  // Holds nothing from now on: the process is exiting, or is a child after
  // fork (whose connection is its parent's, and has no thread). Drops what
  // is held.
  void stop();

 private:
  void run();

  std::mutex& lock_;
  std::function<void()> flush_;
  std::vector<uint8_t> bytes_;
  std::chrono::steady_clock::time_point since_;  // when the first held frame came
  std::condition_variable wake_;
  bool started_ = false;  // the thread runs
  bool idle_ = false;     // the thread waits for a first frame, with no deadline
  bool stopped_ = false;
};

}  // namespace scuda::client
