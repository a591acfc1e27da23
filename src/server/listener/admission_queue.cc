#include "server/listener/admission_queue.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

namespace scuda::server {

namespace {

std::string token_of(const SessionSlot& slot) {
  return std::string(slot.token, strnlen(slot.token, sizeof slot.token));
}

// The queued slots, first in line first: higher priority, then earlier arrival.
std::vector<SessionSlot*> in_line(SessionTable* table) {
  std::vector<SessionSlot*> line;
  for (SessionSlot& slot : table->slots)
    if (slot.state.load(std::memory_order_acquire) == kSlotQueued) line.push_back(&slot);
  std::sort(line.begin(), line.end(), [](const SessionSlot* a, const SessionSlot* b) {
    return a->priority != b->priority ? a->priority > b->priority : a->ticket < b->ticket;
  });
  return line;
}

// Places held per token name.
std::map<std::string, int> places_by_token(const SessionTable& table) {
  std::map<std::string, int> held;
  for (const SessionSlot& slot : table.slots)
    if (holds_place(slot.state.load(std::memory_order_acquire))) ++held[token_of(slot)];
  return held;
}

// Whether a reload removed the token a queued session came with: it may
// not take a place the file no longer grants. A job's token is in no file.
bool token_removed(const AdmissionLimits& limits, const std::string& name) {
  return limits.tokens && !limits.tokens->open() && !limits.tokens->find(name) &&
         !is_job_token_name(name);
}

// Sends the slot's session away; false when it left the queue meanwhile.
bool send_away(SessionSlot* slot) {
  uint32_t queued = kSlotQueued;
  if (!slot->state.compare_exchange_strong(queued, kSlotRefused, std::memory_order_acq_rel))
    return false;
  wake_slot(slot);
  spdlog::warn(
      "admission queue: session {} leaves the queue: its token '{}' is no longer in the "
      "tokens file",
      slot->pid.load(), token_of(*slot));
  return true;
}

int token_limit(const AdmissionLimits& limits, const std::string& name) {
  const Token* t = limits.tokens ? limits.tokens->find(name) : nullptr;
  return t ? t->max_sessions : 0;
}

// Gives the slot its place, and logs it when it waited in line; false when
// its session left the queue meanwhile.
bool admit(SessionSlot* slot) {
  uint32_t queued = kSlotQueued;
  if (!slot->state.compare_exchange_strong(queued, kSlotAdmitted, std::memory_order_acq_rel))
    return false;
  wake_slot(slot);
  // A session that never had to wait is no news.
  if (slot->position.load() == 0) return true;
  spdlog::info("admission queue: session {} (token '{}', priority {}) admitted after {:.1f} s",
               slot->pid.load(), token_of(*slot), slot->priority,
               static_cast<double>(unix_now_ms() - slot->queued_ms) / 1000);
  return true;
}

// A slot left in line: its place, and why it waits; logged when either changes.
void keep_waiting(SessionSlot* slot, uint32_t position, WaitReason reason) {
  const uint32_t was = slot->position.exchange(position, std::memory_order_acq_rel);
  const uint32_t had = slot->wait_reason.exchange(reason, std::memory_order_acq_rel);
  if (was == position && had == reason) return;
  spdlog::info("admission queue: session {} (token '{}', priority {}) is number {} in line: {}",
               slot->pid.load(), token_of(*slot), slot->priority, position,
               reason == kWaitServerFull ? "the server is at its limit of sessions"
                                         : "its token is at its limit of sessions");
}

}  // namespace

int places_taken(const SessionTable& table) {
  int n = 0;
  for (const SessionSlot& slot : table.slots)
    n += holds_place(slot.state.load(std::memory_order_acquire));
  return n;
}

// A session blocked only by its token's limit does not hold back the ones
// behind it whose tokens have room.
void admit_waiting(SessionTable* table, const AdmissionLimits& limits) {
  int taken = places_taken(*table);
  std::map<std::string, int> held = places_by_token(*table);
  uint32_t position = 0;
  for (SessionSlot* slot : in_line(table)) {
    const std::string name = token_of(*slot);
    if (token_removed(limits, name)) {
      send_away(slot);
      continue;
    }
    const int limit = token_limit(limits, name);
    const bool server_room = limits.max_sessions == 0 || taken < limits.max_sessions;
    const bool token_room = limit == 0 || held[name] < limit;
    if (server_room && token_room) {
      if (admit(slot)) ++taken, ++held[name];
      continue;
    }
    keep_waiting(slot, ++position, server_room ? kWaitTokenFull : kWaitServerFull);
  }
}

}  // namespace scuda::server
