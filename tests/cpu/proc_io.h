// A counter of /proc/self/io or /proc/thread-self/io ("wchar:", "syscw:"),
// if the kernel keeps it: what tests read to see what a process or thread
// wrote.
#pragma once

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>
#include <string_view>

namespace scuda::test {

inline std::optional<uint64_t> proc_io(const char* file, std::string_view key) {
  std::ifstream in(file);
  std::string name;
  for (uint64_t value = 0; in >> name >> value;)
    if (name == key) return value;
  return std::nullopt;
}

}  // namespace scuda::test
