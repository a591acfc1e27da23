// Logging setup shared by the CLI and the client library.
#pragma once

namespace scuda {

// Configures spdlog: messages go to stderr prefixed with "scuda", at the level
// SCUDA_LOG_LEVEL names (trace, debug, info, warn, error; default warn), or
// `verbose` raises it to debug.
void init_logging(bool verbose = false);

}  // namespace scuda
