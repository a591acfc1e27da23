#include "common/log.h"

#include <cstdlib>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace scuda {

void init_logging(bool verbose) {
  auto logger = spdlog::stderr_color_mt("scuda");
  logger->set_pattern("scuda[%P] %l: %v");
  spdlog::set_default_logger(logger);
  spdlog::level::level_enum level = verbose ? spdlog::level::debug : spdlog::level::warn;
  if (const char* env = std::getenv("SCUDA_LOG_LEVEL"))
    level = spdlog::level::from_str(env);
  spdlog::set_level(level);
}

}  // namespace scuda
