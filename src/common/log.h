// Logging setup shared by the CLI and the client library.
#pragma once

#include <string>

#include <spdlog/common.h>

namespace scuda {

// Configures spdlog: messages go to stderr prefixed with "scuda", at the level
// SCUDA_LOG_LEVEL names (default warn), or `verbose` raises it to debug. A
// value that names no level keeps the default and is logged as an error
// that lists the levels: the client library cannot refuse to run a program
// over it, so the CLI checks it first (env_log_level) and refuses.
void init_logging(bool verbose = false);

// Sets *level to the level `name` names; false when it names none, and then
// *error lists the levels. (spdlog itself reads an unknown name as "off",
// which silences every line.)
bool log_level_named(const std::string& name, spdlog::level::level_enum* level, std::string* error);

// Sets *level to the level SCUDA_LOG_LEVEL names, when set; false when it
// names none, and then *error lists the levels.
bool env_log_level(spdlog::level::level_enum* level, std::string* error);

}  // namespace scuda
