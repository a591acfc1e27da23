#include "common/log.h"

#include <cstdlib>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace scuda {

bool log_level_named(const std::string& name, spdlog::level::level_enum* level,
                     std::string* error) {
  const spdlog::level::level_enum named = spdlog::level::from_str(name);
  if (named == spdlog::level::off && name != "off") {
    *error = "SCUDA_LOG_LEVEL=" + name +
             " names no log level; the levels are trace, debug, info, warn, error, critical "
             "and off";
    return false;
  }
  *level = named;
  return true;
}

bool env_log_level(spdlog::level::level_enum* level, std::string* error) {
  const char* env = std::getenv("SCUDA_LOG_LEVEL");
  return !env || !*env || log_level_named(env, level, error);
}

void init_logging(bool verbose) {
  // One registry per process when spdlog is a shared library (a build with
  // SCUDA_STANDALONE off): the client and the NVML stand-in then share the
  // logger the first of them made.
  auto logger = spdlog::get("scuda");
  if (!logger) logger = spdlog::stderr_color_mt("scuda");
  logger->set_pattern("scuda[%P] %l: %v");
  spdlog::set_default_logger(logger);
  spdlog::level::level_enum level = verbose ? spdlog::level::debug : spdlog::level::warn;
  std::string error;
  const bool named = env_log_level(&level, &error);
  spdlog::set_level(level);
  if (!named) spdlog::error("{}", error);
}

}  // namespace scuda
