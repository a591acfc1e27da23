// A minimal HTTP GET for tests that read the server's /metrics and
// Prometheus's API.
#pragma once

#include <string>

#include "server_process.h"

namespace scuda::test {

// The HOST:PORT where `server` (started with --metrics) said it serves its
// metrics; "" if it did not.
std::string metrics_address(const ServerProcess& server);

// The body of http://ADDRESS`path` (ADDRESS is HOST:PORT), or "" when the
// request fails or the status is not 200.
std::string http_get(const std::string& address, const std::string& path);

// The value of the sample named `name` (its whole name, labels included)
// in Prometheus text `text`; -1 when there is none.
double metric_value(const std::string& text, const std::string& name);

}  // namespace scuda::test
