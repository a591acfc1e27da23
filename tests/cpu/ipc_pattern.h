// The bytes the IPC tests share between their two processes.
#pragma once

#include <cstddef>

namespace scuda::test {

inline unsigned char ipc_pattern(size_t i) { return static_cast<unsigned char>(i * 7 + 1); }
// What the second process writes over the first bytes.
constexpr unsigned char kWritten = 0x5a;
constexpr size_t kWrittenBytes = 64;

}  // namespace scuda::test
