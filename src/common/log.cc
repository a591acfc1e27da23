#include "common/log.h"

#include <cstdlib>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

namespace scuda {

spdlog::level::level_enum log_level_named(const std::string& name,
                                          spdlog::level::level_enum fallback,
                                          std::string* complaint) {
  const spdlog::level::level_enum level = spdlog::level::from_str(name);
  if (level != spdlog::level::off || name == "off") return level;
  const auto fallback_name = spdlog::level::to_string_view(fallback);
  *complaint = "SCUDA_LOG_LEVEL=" + name +
               " names no log level (trace, debug, info, warn, error, critical, off); using " +
               std::string(fallback_name.data(), fallback_name.size());
  return fallback;
}

void init_logging(bool verbose) {
  auto logger = spdlog::stderr_color_mt("scuda");
  logger->set_pattern("scuda[%P] %l: %v");
  spdlog::set_default_logger(logger);
  spdlog::level::level_enum level = verbose ? spdlog::level::debug : spdlog::level::warn;
  std::string complaint;
  if (const char* env = std::getenv("SCUDA_LOG_LEVEL"))
    level = log_level_named(env, level, &complaint);
  spdlog::set_level(level);
  if (!complaint.empty()) spdlog::warn("{}", complaint);
}

}  // namespace scuda
