// The client's one connection to its server session. Requests and replies
// are strictly ordered; callers hold the lock across a request and its reply
// (or across a pipelined batch of them). One-way requests may be held back
// and sent together (outbox.h), always ahead of any later request.
#pragma once

#include <cuda.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "client/outbox.h"
#include "common/socket.h"
#include "protocol/frame.h"
#include "protocol/frame_io.h"
#include "protocol/handshake.h"

namespace scuda::client {

// Where a reply's bytes go in the caller's memory: rows of `row` bytes,
// `pitch` apart, `rows_per_slice` to a slice, slices `slice_pitch` apart.
struct HostLayout {
  size_t row;
  size_t pitch;
  size_t rows_per_slice;
  size_t slice_pitch;
  static HostLayout contiguous(size_t size) { return {size, size, 1, size}; }
  // True when `size` bytes laid out so are one run: no gaps between rows
  // or slices.
  bool is_contiguous(size_t size) const {
    const size_t slice = row * rows_per_slice;
    return row == size || (pitch == row && (size <= slice || slice_pitch == slice));
  }
};

class Connection {
 public:
  // Connects to `address` (HOST[:PORT]) and performs the handshake. On
  // failure says why, in words meant for the user.
  bool open(const std::string& address, const std::string& token, std::string* error);

  const protocol::Welcome& welcome() const { return welcome_; }
  std::mutex& mutex() { return mutex_; }

  // With the lock held: sends a request with the given frame flags (one-way,
  // synchronizing) and returns its id; false once the connection is lost. A
  // one-way request may only be held (outbox.h): its sending may fail later,
  // and then the next call reports the lost connection.
  bool send(uint32_t op, uint16_t flags, const void* head, size_t head_size,
            const void* tail = nullptr, size_t tail_size = 0, uint64_t* id = nullptr);
  // With the lock held: waits for the reply to `id` and returns the CUresult
  // it carries, leaving the rest of its payload in *reply.
  CUresult receive(uint64_t id, std::vector<uint8_t>* reply);
  // With the lock held: like receive, but the reply's `size` bytes of data go
  // straight into `dst` (a reply of any other size is an error).
  CUresult receive_into(uint64_t id, void* dst, size_t size);
  // The same, with the bytes laid out in `dst` as `layout` says.
  CUresult receive_into(uint64_t id, void* dst, size_t size, const HostLayout& layout);
  // With the lock held: the reply to `id` will carry `size` bytes for `dst`;
  // it is read whenever a later reply is awaited (at the latest, at the next
  // synchronizing call), which is when CUDA lets the program read `dst`.
  void deliver_later(uint64_t id, void* dst, size_t size);
  void deliver_later(uint64_t id, void* dst, size_t size, const HostLayout& layout);
  // With the lock held: the first error of a reply read by deliver_later, once.
  CUresult take_deferred_error();
  // Replies the program has waited for (receive and receive_into calls), for
  // benchmarks that count round trips; any thread may read it.
  uint64_t replies_awaited() const { return awaited_.load(std::memory_order_relaxed); }
  // With the lock held: makes `ctx_id` the server's current context if the
  // last one sent differs.
  bool sync_context(uint64_t ctx_id);

  // At exit, without the lock: sends what is held and holds nothing after.
  // Skipped while another thread holds the lock: its call sends it.
  void flush_at_exit();
  // Around fork, in the forking thread: before_fork takes the lock if it is
  // free and sends what is held (true when it took it); after_fork releases
  // it, and in the child stops holding, since the child shares its parent's
  // connection and must never send its parent's frames.
  bool before_fork();
  void after_fork(bool locked, bool child);

 private:
  // Reads the reply's header and result word; false (and *result says why)
  // once the connection is lost. *rest is the payload left to read.
  bool reply_head(uint64_t id, CUresult* result, size_t* rest);
  // Reads the next frame's header, first writing the session's output
  // frames (kernels' printf) to this process's stdout.
  bool next_header(protocol::FrameHeader* h, CUresult* result);
  void count_reply(size_t rest, std::chrono::steady_clock::time_point start);
  CUresult lost(const std::string& why);
  // Sends what the outbox holds.
  bool flush_held();

  std::mutex mutex_;
  Outbox outbox_{mutex_, [this] { flush_held(); }};
  Socket socket_;
  protocol::FrameReader reader_{socket_};
  std::string address_;
  protocol::Welcome welcome_;
  uint64_t next_request_ = 1;
  uint64_t server_context_ = 0;
  bool broken_ = false;
  struct Delivery {
    uint64_t id;
    void* dst;
    size_t size;
    HostLayout layout;
  };
  std::deque<Delivery> deliveries_;
  CUresult deferred_error_ = CUDA_SUCCESS;
  // Reads every reply owed to deliver_later ahead of request `id`.
  CUresult deliver_before(uint64_t id);
  CUresult read_into(uint64_t id, void* dst, size_t size, const HostLayout& layout);
  uint32_t reply_op_ = 0;  // op of the reply being read, for stats
  std::atomic<uint64_t> awaited_{0};
};

}  // namespace scuda::client
