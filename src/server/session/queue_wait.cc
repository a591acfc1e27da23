#include "server/session/queue_wait.h"

#include <poll.h>
#include <unistd.h>

#include <chrono>
#include <cstring>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "protocol/frame_io.h"
#include "protocol/handshake.h"
#include "protocol/ops.h"

namespace scuda::server {

namespace {

using Clock = std::chrono::steady_clock;

// How often the place is told again when it has not changed: the client's
// handshake read gives up after a minute of silence.
constexpr auto kRetell = std::chrono::seconds(10);
// How often the wait looks at the client's connection.
constexpr int kLookMs = 200;

uint32_t queue_length(const SessionTable& table) {
  uint32_t n = 0;
  for (const SessionSlot& slot : table.slots)
    n += slot.state.load(std::memory_order_acquire) == kSlotQueued;
  return n;
}

std::string reason_text(const WaitTerms& terms, uint32_t reason) {
  if (reason == kWaitTokenFull)
    return fmt::format("token '{}' is at its limit of {} sessions", terms.token, terms.token_limit);
  return fmt::format("the server is at its limit of {} sessions", terms.server_limit);
}

bool tell_place(Socket& client, uint64_t request_id, const SessionTable& table,
                const SessionSlot& slot, const WaitTerms& terms) {
  protocol::QueuePosition q{slot.position.load(), queue_length(table),
                            reason_text(terms, slot.wait_reason.load())};
  protocol::Writer w;
  protocol::encode(q, w);
  protocol::FrameHeader h;
  h.flags = protocol::kReply;
  h.op = protocol::kOpQueuePosition;
  h.request_id = request_id;
  return protocol::write_frame(client, h, w.data().data(), w.size());
}

// A waiting client sends nothing: anything readable is its end of the
// connection (or a client that broke the protocol).
bool client_left(const Socket& client) {
  pollfd p{client.fd(), POLLIN | POLLRDHUP, 0};
  return poll(&p, 1, 0) > 0;
}

void tell_listener(const SessionTable& table) {
  if (table.queue_event < 0) return;
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = write(table.queue_event, &one, sizeof one);
}

// Takes the slot out of line, unless the listener admitted it meanwhile.
void leave(SessionTable* table, SessionSlot* slot) {
  uint32_t queued = kSlotQueued;
  slot->state.compare_exchange_strong(queued, kSlotOpening, std::memory_order_acq_rel);
  tell_listener(*table);
}

// The listener's decision on a slot it took out of line.
Wait decided(const SessionSlot& slot) {
  return slot.state.load(std::memory_order_acquire) == kSlotRefused ? Wait::kTokenRemoved
                                                                    : Wait::kAdmitted;
}

}  // namespace

Wait wait_for_place(Socket& client, uint64_t request_id, SessionTable* table, SessionSlot* slot,
                    const WaitTerms& terms) {
  if (!table || !slot) return Wait::kAdmitted;
  slot->ticket = table->next_ticket.fetch_add(1);
  slot->queued_ms = unix_now_ms();
  slot->state.store(kSlotQueued, std::memory_order_release);
  tell_listener(*table);
  uint32_t told = 0;
  auto told_at = Clock::now();
  for (;;) {
    wait_on_slot(slot, kSlotQueued, kLookMs);
    if (slot->state.load(std::memory_order_acquire) != kSlotQueued) return decided(*slot);
    if (table->draining.load() || client_left(client)) {
      leave(table, slot);
      if (slot->state.load() != kSlotOpening) return decided(*slot);
      spdlog::info("admission queue: session {} leaves the queue after {:.1f} s: {}", getpid(),
                   static_cast<double>(unix_now_ms() - slot->queued_ms) / 1000,
                   table->draining.load() ? "the server is stopping" : "its client went away");
      return table->draining.load() ? Wait::kServerStopping : Wait::kClientLeft;
    }
    const uint32_t position = slot->position.load();
    if (position == 0 || (position == told && Clock::now() - told_at < kRetell)) continue;
    if (!tell_place(client, request_id, *table, *slot, terms)) {
      leave(table, slot);
      return Wait::kClientLeft;
    }
    told = position;
    told_at = Clock::now();
  }
}

}  // namespace scuda::server
