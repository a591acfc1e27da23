#include "launch_log.h"

#include <cstdio>
#include <cstdlib>

namespace scuda_double {

namespace {

// The log, open for appending; nullptr when there is none. The variable is
// read on every line so a test may set it at any time.
std::FILE* open_log() {
  const char* path = std::getenv("SCUDA_DOUBLE_LOG");
  return path == nullptr || *path == '\0' ? nullptr : std::fopen(path, "a");
}

}  // namespace

void log_launch(const LaunchRecord& r) {
  std::FILE* file = open_log();
  if (file == nullptr) return;
  std::fprintf(file, "launch %s grid=%u,%u,%u block=%u,%u,%u shmem=%u params=", r.name.c_str(),
               r.grid[0], r.grid[1], r.grid[2], r.block[0], r.block[1], r.block[2], r.shmem);
  for (uint8_t byte : r.params) std::fprintf(file, "%02x", byte);
  if (r.cooperative) std::fputs(" cooperative", file);
  std::fputc('\n', file);
  std::fclose(file);
}

void log_synchronize() { log_line("synchronize"); }

void log_line(const char* line) {
  std::FILE* file = open_log();
  if (file == nullptr) return;
  std::fprintf(file, "%s\n", line);
  std::fclose(file);
}

}  // namespace scuda_double
