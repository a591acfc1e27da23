// The session's side of the admission queue (docs/architecture.md, "Tokens
// and the admission queue"): an authenticated client waits here, in its
// session's process, before the driver is loaded, until the listener gives
// its slot a place.
#pragma once

#include <cstdint>
#include <string>

#include "common/socket.h"
#include "server/status/session_table.h"

namespace scuda::server {

// What the client is told about its wait.
struct WaitTerms {
  std::string token;     // "" for an unnamed token
  int token_limit = 0;   // the token's max_sessions
  int server_limit = 0;  // --max-sessions
};

enum class Wait { kAdmitted, kClientLeft, kServerStopping, kTokenRemoved };

// Queues the slot and waits for the listener to admit it, telling the client
// (kOpQueuePosition, answering `request_id`) its place whenever it changes and
// every few seconds. With no table, admits at once.
Wait wait_for_place(Socket& client, uint64_t request_id, SessionTable* table, SessionSlot* slot,
                    const WaitTerms& terms);

}  // namespace scuda::server
