// What the session processes tell the listener: a table in memory that the
// listener maps before it forks anything, so that every child shares it. One
// slot per session; each field has one writer (the listener, the session or
// the GPU monitor), and readers (`scuda status`, /metrics) take copies.
// Bounded: sessions past the last slot run without one and go unreported.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "server/listener/job_revocations.h"

namespace scuda::server {

constexpr size_t kSessionSlots = 1024;
constexpr size_t kMaxGpus = 16;

enum SlotState : uint32_t {
  kSlotFree = 0,
  kSlotOpening = 1,   // a connection before its handshake (or a join's, or a status request's)
  kSlotActive = 2,    // a session past its handshake
  kSlotQueued = 3,    // authenticated, waiting in the admission queue for a place
  kSlotAdmitted = 4,  // given a place by the listener, not yet past its handshake
  kSlotRefused = 5,   // queued with a token a reload removed: the listener sends it away
};

// Why a queued session waits (SessionSlot::wait_reason).
enum WaitReason : uint32_t {
  kWaitUnknown = 0,     // the listener has not looked at it yet
  kWaitServerFull = 1,  // the server is at --max-sessions
  kWaitTokenFull = 2,   // its token is at its max_sessions
};

// Whether a slot in `state` holds one of the server's places.
inline bool holds_place(uint32_t state) { return state == kSlotActive || state == kSlotAdmitted; }

// Milliseconds since the Unix epoch: the table's times.
int64_t unix_now_ms();

struct SessionSlot {
  std::atomic<uint32_t> state{kSlotFree};
  // Bumped each time the listener takes the slot, so that a reader can tell
  // that the slot changed hands while it copied it.
  std::atomic<uint32_t> generation{0};
  std::atomic<int32_t> pid{0};
  int64_t started_ms = 0;  // Unix time, set by the listener
  char peer[64] = {};      // set by the listener
  char program[64] = {};   // set by the session before it turns active
  // Set by the session once authenticated, before it queues: its token's
  // name ("" for an unnamed token) and priority.
  char token[64] = {};
  int32_t priority = 0;
  uint64_t ticket = 0;    // arrival order in the queue, from SessionTable::next_ticket
  int64_t queued_ms = 0;  // Unix time it began to wait
  // Set by the listener while the slot is queued: 1-based place in the
  // queue, and why it waits (WaitReason).
  std::atomic<uint32_t> position{0};
  std::atomic<uint32_t> wait_reason{kWaitUnknown};
  // Device memory the session's allocations hold, by its own count (the
  // token's memory cap is checked against these).
  std::atomic<uint64_t> charged{0};
  std::atomic<uint64_t> bytes_in{0}, bytes_out{0}, requests{0}, errors{0};
  std::atomic<uint64_t> device_memory{0};  // set by the GPU monitor
};

struct GpuSlot {
  char name[96] = {};
  uint64_t memory_used = 0;
  uint64_t memory_total = 0;
  bool used_known = false;
  int32_t utilization = -1;  // percent; -1: not known
};

// The running totals of sessions that have ended: kept so that counters
// never go back when a session's slot is freed.
struct EndedTotals {
  std::atomic<uint64_t> bytes_in{0}, bytes_out{0}, requests{0}, errors{0};
};

struct SessionTable {
  int64_t started_ms = 0;
  // Odd while the listener moves an ended session's counters into `ended`.
  std::atomic<uint32_t> fold_sequence{0};
  EndedTotals ended;
  std::atomic<uint64_t> sessions_started{0};
  std::atomic<uint64_t> next_ticket{0};
  // An eventfd of the listener's: a session that queues writes to it, so
  // that the listener looks at the queue at once. Set before any fork.
  int queue_event = -1;
  // Set by the listener when it stops: queued sessions give up their wait.
  std::atomic<uint32_t> draining{0};
  // Odd while the GPU monitor writes `gpus`.
  std::atomic<uint32_t> gpu_sequence{0};
  uint32_t gpu_count = 0;
  char gpu_source[16] = {};  // "NVML" or "driver"
  GpuSlot gpus[kMaxGpus];
  SessionSlot slots[kSessionSlots];
  // Jobs whose tokens were dropped (any session process writes it).
  RevokedJobs revoked_jobs;

  // Maps a new table shared with every process forked after it; nullptr
  // (with *error) if it cannot.
  static SessionTable* create(std::string* error);

  // Listener: a free slot for a connection from `peer`, or nullptr when all
  // are taken.
  SessionSlot* take(const std::string& peer);
  // Listener: the slot's process has ended (or never started): its counters
  // go into the totals and the slot is free again.
  void release(SessionSlot* slot);
  // Listener: release() for the slot of process `pid`, if it has one.
  void release(pid_t pid);
  // Device memory charged by the sessions of token `name` that hold a place.
  uint64_t charged_to(const char* name) const;
  // A session process: ends (SIGTERM) every session of this server
  // authenticated with token `name`, queued or running, but the caller's
  // own; how many it ended. A pid no longer the slot's is left alone.
  int end_sessions_of(const std::string& name);
};

// Waits while slot->state is `state`, at most `ms` milliseconds (a futex on
// the shared table: the listener wakes it with wake_slot).
void wait_on_slot(SessionSlot* slot, uint32_t state, int ms);
// Wakes the session waiting on its slot's state.
void wake_slot(SessionSlot* slot);

// The session's side of its slot (null-safe: a session may have none).
class SessionReport {
 public:
  SessionReport(SessionTable* table, SessionSlot* slot) : table_(table), slot_(slot) {}

  // The handshake succeeded: the session is listed from now on.
  void active(const std::string& program);
  // A request of `bytes` on the wire arrived.
  void request(size_t bytes);
  void received(size_t bytes);
  void sent(size_t bytes);
  // A request's result: counted as an error unless it is success or
  // CUDA_ERROR_NOT_READY (an answer to a query, not a failure).
  void result(uint32_t rc);
  // The session refused its client.
  void error();
  // The client was authenticated with token `name` of `priority`.
  void authenticated(const std::string& name, int priority);

 private:
  SessionTable* table_;
  SessionSlot* slot_;
};

}  // namespace scuda::server
