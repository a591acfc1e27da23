#include "server/status/server_state.h"

#include <sched.h>

#include <algorithm>
#include <cstring>

namespace scuda::server {

namespace {

// Whether a copy made under `sequence` stands: no writer was at work. A
// writer that died midway leaves the sequence odd for good, so after many
// attempts the copy stands anyway rather than the reader waiting forever.
bool settled(const std::atomic<uint32_t>& now, uint32_t sequence, int attempt) {
  if (sequence % 2 == 0 && now.load(std::memory_order_acquire) == sequence) return true;
  if (attempt >= 1000) return true;
  sched_yield();
  return false;
}

std::string text_of(const char* field, size_t room) {
  return std::string(field, strnlen(field, room));
}

// A slot's copy; false when it is not an active session's or changed hands
// while it was copied.
bool copy_slot(const SessionSlot& slot, SessionState* s) {
  const uint32_t generation = slot.generation.load(std::memory_order_acquire);
  if (slot.state.load(std::memory_order_acquire) != kSlotActive) return false;
  s->pid = slot.pid.load();
  s->peer = text_of(slot.peer, sizeof slot.peer);
  s->program = text_of(slot.program, sizeof slot.program);
  s->token = text_of(slot.token, sizeof slot.token);
  s->age_ms = unix_now_ms() - slot.started_ms;
  s->bytes_in = slot.bytes_in.load();
  s->bytes_out = slot.bytes_out.load();
  s->requests = slot.requests.load();
  s->errors = slot.errors.load();
  s->device_memory = slot.device_memory.load();
  return slot.state.load(std::memory_order_acquire) == kSlotActive &&
         slot.generation.load(std::memory_order_acquire) == generation;
}

// The sessions and totals, as of one moment between the listener's folds.
void read_sessions(const SessionTable& table, ServerState* state) {
  for (int attempt = 0;; ++attempt) {
    const uint32_t sequence = table.fold_sequence.load(std::memory_order_acquire);
    state->sessions.clear();
    state->bytes_in = table.ended.bytes_in.load();
    state->bytes_out = table.ended.bytes_out.load();
    state->requests = table.ended.requests.load();
    state->errors = table.ended.errors.load();
    for (const SessionSlot& slot : table.slots) {
      SessionState s;
      if (!copy_slot(slot, &s)) continue;
      state->bytes_in += s.bytes_in;
      state->bytes_out += s.bytes_out;
      state->requests += s.requests;
      state->errors += s.errors;
      state->sessions.push_back(std::move(s));
    }
    if (settled(table.fold_sequence, sequence, attempt)) return;
  }
}

// The queue as it stands; a slot that leaves it while copied may still be
// listed, which a moment's copy cannot avoid.
void read_queue(const SessionTable& table, ServerState* state) {
  for (const SessionSlot& slot : table.slots) {
    if (slot.state.load(std::memory_order_acquire) != kSlotQueued) continue;
    state->queue.push_back({slot.pid.load(), text_of(slot.peer, sizeof slot.peer),
                            text_of(slot.token, sizeof slot.token), slot.priority,
                            slot.position.load(), unix_now_ms() - slot.queued_ms});
  }
  std::sort(state->queue.begin(), state->queue.end(),
            [](const QueuedState& a, const QueuedState& b) {
              return (a.position - 1u) < (b.position - 1u);  // unplaced (0) last
            });
}

void read_gpus(const SessionTable& table, ServerState* state) {
  for (int attempt = 0;; ++attempt) {
    const uint32_t sequence = table.gpu_sequence.load(std::memory_order_acquire);
    state->gpus.clear();
    state->gpu_source =
        std::string(table.gpu_source, strnlen(table.gpu_source, sizeof table.gpu_source));
    for (uint32_t i = 0; i < table.gpu_count && i < kMaxGpus; ++i) {
      const GpuSlot& g = table.gpus[i];
      state->gpus.push_back({i, std::string(g.name, strnlen(g.name, sizeof g.name)), g.memory_used,
                             g.memory_total, g.used_known, g.utilization});
    }
    if (settled(table.gpu_sequence, sequence, attempt)) return;
  }
}

}  // namespace

ServerState read_state(const SessionTable& table) {
  ServerState state;
  state.uptime_ms = unix_now_ms() - table.started_ms;
  state.sessions_started = table.sessions_started.load();
  read_sessions(table, &state);
  read_queue(table, &state);
  read_gpus(table, &state);
  return state;
}

}  // namespace scuda::server
