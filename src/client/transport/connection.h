// The client's connection to its server session. Requests and replies are
// strictly ordered; callers hold the lock across a request and its reply (or
// across a pipelined batch of them). One-way requests may be held back and
// sent together (outbox.h), always ahead of any later request. One thread
// more may read replies: the callback channel's, which delivers what a host
// callback may read (deliver_ahead_of) and never takes the lock.
#pragma once

#include <cuda.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "client/transport/outbox.h"
#include "common/lock_order.h"
#include "common/socket.h"
#include "protocol/codec.h"
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

// How long a wait for a reply may hear nothing from the server before the
// connection counts as lost (SCUDA_SERVER_TIMEOUT seconds, 15 by default;
// 0: no limit).
std::chrono::milliseconds server_silence_limit();

class Connection {
 public:
  // Connects to `address` (HOST[:PORT]) and performs the handshake, asking
  // the session to keep `images`. On failure says why, in words meant for
  // the user.
  bool open(const std::string& address, const std::string& token,
            const std::vector<protocol::ImageRef>& images, std::string* error);
  // Before open: the session offers all its GPUs whatever the client's
  // CUDA_VISIBLE_DEVICES, which the client applies over several servers'
  // GPUs itself (pools/servers.h).
  void offer_all_gpus() { offer_all_ = true; }

  // Any thread, once open: another connection that joins this session (its
  // callback channel, or a lane), with the name and secret the session gave
  // out.
  Socket join(const std::string& name, const std::string& secret, std::string* error) const;

  const protocol::Welcome& welcome() const { return welcome_; }
  // The server's address as given (HOST:PORT or tls://HOST:PORT) and the
  // token the connection presented.
  const std::string& address() const { return address_; }
  const std::string& token() const { return token_; }
  // Over TLS, the SHA-256 of the certificate the server showed; else empty.
  std::string peer_certificate() const { return socket_.peer_certificate(); }
  RankedMutex& mutex() { return mutex_; }

  // With the lock held: sends a request with the given frame flags (one-way,
  // synchronizing) and returns its id; false once the connection is lost. A
  // one-way request may only be held (outbox.h): its sending may fail later,
  // and then the next call reports the lost connection.
  bool send(uint32_t op, uint16_t flags, const void* head, size_t head_size,
            const void* tail = nullptr, size_t tail_size = 0, uint64_t* id = nullptr);
  // With the lock held: writes the one-way requests held so far now; false
  // once the connection is lost.
  bool flush() { return flush_held(); }
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
  // With the lock held: the reply to `id` goes to `handle` whenever a later
  // reply is awaited, or at settle(id). A result other than CUDA_SUCCESS
  // that `handle` returns is kept like a deferred copy's error.
  using ReplyHandler = std::function<CUresult(CUresult rc, protocol::Reader& payload)>;
  void handle_later(uint64_t id, ReplyHandler handle);
  // With the lock held: reads every reply owed to deliver_later or
  // handle_later up to and including the reply to `id`.
  CUresult settle(uint64_t id);
  // With the lock held: reads every reply owed to deliver_later or
  // handle_later so far.
  CUresult settle_all();
  // With the lock held: the first error of a reply read by deliver_later or
  // handle_later, once.
  CUresult take_deferred_error();
  // Replies the program has waited for (receive, receive_into and settle
  // calls), for benchmarks that count round trips; any thread may read it.
  uint64_t replies_awaited() const { return awaited_.load(std::memory_order_relaxed); }
  // With the lock held: moves into *changes those of registered memory that
  // came ahead of synchronizing replies (protocol::kWantChanges) since the
  // last call, each in a mirror-pull reply's layout; whether a request asked
  // for them since.
  bool take_mirror_changes(std::vector<std::vector<uint8_t>>* changes) {
    *changes = std::exchange(mirror_changes_, {});
    return std::exchange(changes_asked_, false);
  }
  // With the lock held: makes `ctx_id` the server's current context if the
  // last one sent differs.
  bool sync_context(uint64_t ctx_id);
  // Without the lock: returns once every reply owed to deliver_later ahead of
  // request `id` has been read into place, reading them itself when no
  // other thread is reading replies.
  void deliver_ahead_of(uint64_t id);

  // At exit, without the lock: sends what is held and holds nothing after.
  // Skipped while another thread holds the lock for long: its call sends it.
  void flush_at_exit();
  // Around fork, in the forking thread: before_fork takes the lock if it is
  // free and sends what is held (true when it took it); after_fork releases
  // it, and in the child stops holding, since the child shares its parent's
  // connection and must never send its parent's frames.
  bool before_fork();
  void after_fork(bool locked, bool child);

 private:
  struct Delivery {
    uint64_t id;
    void* dst;  // where the data goes, unless `handle` takes the reply
    size_t size;
    HostLayout layout;
    ReplyHandler handle;
  };
  // One thread at a time reads replies: it holds a turn while it does.
  class ReadTurn {
   public:
    // Waits for the turn. With `ahead_of` (a request id; they start at 1),
    // stops waiting once no delivery ahead of that request is owed, and
    // then holds none.
    explicit ReadTurn(Connection& c, uint64_t ahead_of = 0);
    ~ReadTurn();
    bool held() const { return held_; }

   private:
    Connection& c_;
    bool held_ = false;
  };

  protocol::Hello hello() const;
  // Reads the reply's header and result word; false (and *result says why)
  // once the connection is lost. *rest is the payload left to read.
  bool reply_head(uint64_t id, CUresult* result, size_t* rest);
  // Reads the next frame's header, first writing the session's output
  // frames (kernels' printf) to this process's stdout.
  bool next_header(protocol::FrameHeader* h, CUresult* result);
  void count_reply(size_t rest, std::chrono::steady_clock::time_point start);
  CUresult lost(const std::string& why);
  // With turn_mu_ held: whether a delivery ahead of request `id` is unread.
  bool owes_before(uint64_t id) const;
  // With a turn: reads every reply owed to deliver_later ahead of request
  // `id`. The one to `awaited`, if among them, counts as a round trip in
  // the stats; the rest as deferred.
  CUresult deliver_before(uint64_t id, uint64_t awaited = 0);
  CUresult read_into(uint64_t id, void* dst, size_t size, const HostLayout& layout);
  CUresult read_delivery(const Delivery& d);
  CUresult read_reply(uint64_t id, std::vector<uint8_t>* reply);
  // Sends what the outbox holds.
  bool flush_held();
  // Writes one frame in slices, with progress lines (upload_progress.h).
  bool write_with_progress(const protocol::FrameHeader& h, const void* head, size_t head_size,
                           const void* tail, size_t tail_size);
  // With the outbox's write lock: writes bytes the outbox held.
  bool write_held(std::span<const uint8_t> bytes);

  RankedMutex mutex_{LockRank::kConnection, "Connection::mutex_"};
  Outbox outbox_{mutex_, [this](std::span<const uint8_t> bytes) { return write_held(bytes); },
                 [this] { lost("the connection broke while sending"); }};
  Socket socket_;
  protocol::FrameReader reader_{socket_};
  std::string address_;
  std::string token_;
  bool offer_all_ = false;  // offer_all_gpus()
  protocol::Welcome welcome_;
  uint64_t next_request_ = 1;
  uint64_t server_context_ = 0;
  std::atomic<bool> broken_{false};
  // Set in a child after fork: the socket is its parent's too, so the child
  // must never shut down either side of it.
  bool inherited_ = false;
  std::mutex turn_mu_;  // guards reading_ and deliveries_
  std::condition_variable turn_cv_;
  bool reading_ = false;
  std::deque<Delivery> deliveries_;
  std::atomic<CUresult> deferred_error_{CUDA_SUCCESS};
  uint32_t reply_op_ = 0;  // op of the reply being read, for stats
  bool awaiting_ = false;  // the reply being read is one the caller waits for
  std::atomic<uint64_t> awaited_{0};
  std::vector<std::vector<uint8_t>> mirror_changes_;
  bool changes_asked_ = false;  // a request flagged kWantChanges awaits its changes
};

}  // namespace scuda::client
