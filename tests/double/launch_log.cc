#include "launch_log.h"

#include <cstdio>
#include <cstdlib>

namespace scuda_double {

// The variable is read on every launch so a test may set it at any time.
void log_launch(const LaunchRecord& r) {
  const char* path = std::getenv("SCUDA_DOUBLE_LOG");
  if (path == nullptr || *path == '\0') return;
  std::FILE* file = std::fopen(path, "a");
  if (file == nullptr) return;
  std::fprintf(file, "launch %s grid=%u,%u,%u block=%u,%u,%u shmem=%u params=", r.name.c_str(),
               r.grid[0], r.grid[1], r.grid[2], r.block[0], r.block[1], r.block[2], r.shmem);
  for (uint8_t byte : r.params) std::fprintf(file, "%02x", byte);
  if (r.cooperative) std::fputs(" cooperative", file);
  std::fputc('\n', file);
  std::fclose(file);
}

}  // namespace scuda_double
