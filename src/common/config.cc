#include "common/config.h"

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <utility>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/log.h"

namespace scuda {

namespace {

std::string trim(const std::string& s) {
  const char* ws = " \t\r\n";
  size_t begin = s.find_first_not_of(ws);
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(ws) - begin + 1);
}

std::string first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return trim(line);
}

}  // namespace

unsigned env_number(const char* name, unsigned lowest, unsigned highest, unsigned fallback,
                    const char* instead) {
  const char* env = std::getenv(name);
  if (!env || !*env) return fallback;
  char* end = nullptr;
  const unsigned long v = std::strtoul(env, &end, 10);
  if (*end || *env == '-' || v < lowest || v > highest) {
    spdlog::warn("{}='{}' is not a number from {} to {}; using {}", name, env, lowest, highest,
                 instead ? std::string(instead) : std::to_string(fallback));
    return fallback;
  }
  return static_cast<unsigned>(v);
}

std::string configured_server() {
  if (const char* env = std::getenv("SCUDA_SERVER"); env && *env) return trim(env);
  if (const char* home = std::getenv("HOME"); home && *home)
    return first_line(std::string(home) + "/.config/scuda/host");
  return "";
}

std::vector<std::string> split_servers(const std::string& list) {
  std::vector<std::string> out;
  std::string one;
  for (const char c : list + ",") {
    if (c == ',' || std::isspace(static_cast<unsigned char>(c))) {
      if (!one.empty()) out.push_back(std::exchange(one, ""));
    } else {
      one += c;
    }
  }
  return out;
}

bool pass_through() {
  static const bool value = [] {
    init_logging();
    return configured_server().empty();
  }();
  return value;
}

std::string configured_token_file() {
  const char* env = std::getenv("SCUDA_TOKEN_FILE");
  return env ? env : "";
}

bool read_token_file(const std::string& path, std::string* token, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = fmt::format("cannot read token file '{}'", path);
    return false;
  }
  std::string line;
  std::getline(in, line);
  *token = trim(line);
  if (token->empty()) {
    *error = fmt::format("token file '{}' is empty", path);
    return false;
  }
  return true;
}

}  // namespace scuda
