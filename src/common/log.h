// Logging setup shared by the CLI and the client library.
#pragma once

#include <string>

#include <spdlog/common.h>

namespace scuda {

// Configures spdlog: messages go to stderr prefixed with "scuda", at the level
// SCUDA_LOG_LEVEL names (trace, debug, info, warn, error, critical, off;
// default warn), or `verbose` raises it to debug. A value that names no level
// keeps the default, with a warning that says so.
void init_logging(bool verbose = false);

// The level `name` names, or `fallback` when it names none (then *complaint
// says why, for the log). spdlog itself would read an unknown name as "off"
// and silence every line.
spdlog::level::level_enum log_level_named(const std::string& name,
                                          spdlog::level::level_enum fallback,
                                          std::string* complaint);

}  // namespace scuda
