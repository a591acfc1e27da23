// Answers that the server's driver gives alike every time the same question
// is asked: a kernel's parameter layout and attributes, occupancy results.
// They are kept on disk per server (its driver, devices and protocol), so
// that a program's next run waits for none of them: behind a long link, a
// training program's first step would otherwise wait a round trip for each
// (docs/bench/training.md, "Figures cited by the code"). The file is the
// user's own, like the driver's JIT cache; it is
// still read with bounds checks, and what it gives is only ever an answer the
// same server gave before.
//
// A RecordFile (record_file.h): SCUDA_ANSWER_CACHE=off turns it off,
// SCUDA_CACHE_DIR moves it.
#pragma once

#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "protocol/codec.h"

namespace scuda::client::answers {

// A key: a letter for the kind of question, then the question's bytes.
std::string key(char kind, const protocol::Writer& question);

// The value remembered for `key`, if any.
bool find(std::string_view key, std::string* value);
// Remembers `value` for `key`, for this run and later ones.
void remember(std::string_view key, std::string_view value);

// The same for a value of plain bytes, such as a number.
template <class T>
bool find_value(std::string_view key, T* value) {
  static_assert(std::is_trivially_copyable_v<T>);
  std::string bytes;
  if (!find(key, &bytes) || bytes.size() != sizeof *value) return false;
  std::memcpy(value, bytes.data(), sizeof *value);
  return true;
}
template <class T>
void remember_value(std::string_view key, const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  remember(key, {reinterpret_cast<const char*>(&value), sizeof value});
}

}  // namespace scuda::client::answers
