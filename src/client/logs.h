// The driver's log, which is the session's (logs.cc): dumps, and the
// program's log callbacks, which the callback channel runs.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <string_view>

namespace scuda::client {

// Runs the program's log callback registered as `id` with `message`; false
// when no callback has that id.
bool run_log_callback(uint64_t id, CUlogLevel level, std::string_view message);

}  // namespace scuda::client
