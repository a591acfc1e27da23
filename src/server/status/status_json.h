// The server's state as JSON: the reply to a status request (`scuda status`).
#pragma once

#include <nlohmann/json.hpp>

#include "server/status/server_state.h"

namespace scuda::server {

// The state's JSON document (docs/protocol.md, "Status").
nlohmann::json status_json(const ServerState& state);

}  // namespace scuda::server
