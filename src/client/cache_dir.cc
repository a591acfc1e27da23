#include "client/cache_dir.h"

#include <cstdlib>

namespace scuda::client {

std::string cache_dir() {
  if (const char* dir = std::getenv("SCUDA_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/scuda";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/scuda";
  return {};
}

}  // namespace scuda::client
