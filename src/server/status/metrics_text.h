// The server's state in Prometheus's text exposition format, for /metrics.
#pragma once

#include <string>

#include "server/status/server_state.h"

namespace scuda::server {

// Every metric, with its HELP and TYPE lines.
std::string metrics_text(const ServerState& state);

}  // namespace scuda::server
