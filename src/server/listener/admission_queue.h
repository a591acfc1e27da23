// The listener's side of the admission queue (docs/architecture.md, "Tokens
// and the admission queue"): sessions that authenticated wait in their own
// processes, without the driver, in slots of the session table marked
// queued; the listener alone decides which of them take a place.
#pragma once

#include "server/listener/tokens.h"
#include "server/status/session_table.h"

namespace scuda::server {

struct AdmissionLimits {
  int max_sessions = 0;            // 0: no limit
  const Tokens* tokens = nullptr;  // their max_sessions; null: none
};

// Listener: admits the queued sessions that fit, by priority then arrival,
// wakes each one admitted, and tells the rest their place in line.
void admit_waiting(SessionTable* table, const AdmissionLimits& limits);

// Listener: how many slots hold a place (admitted or active sessions).
int places_taken(const SessionTable& table);

}  // namespace scuda::server
