// The answer to a connection whose first frame is a status request
// (docs/protocol.md, "Status"): a process the listener forked for it reads
// the session table it shares and replies, without loading the driver.
#pragma once

#include <cstdint>

#include "common/socket.h"
#include "server/status/session_table.h"

namespace scuda::server {

// Replies to request `request_id` with CUDA_SUCCESS and the status JSON;
// false if the connection failed.
bool answer_status(Socket& socket, uint64_t request_id, const SessionTable* table);

}  // namespace scuda::server
