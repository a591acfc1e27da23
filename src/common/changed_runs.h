// Finding the bytes that changed between a buffer and its twin (a copy of
// what the other side last had), for coherence traffic that carries only
// those bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace scuda {

// Runs of changed bytes at most this far apart travel as one: a header
// costs more.
inline constexpr size_t kMergeGap = 32;

// Calls fn(offset, size) for each run of bytes where `now` differs from
// `twin` in [0, n), runs at most kMergeGap apart merged.
template <class Fn>
void for_each_changed_run(const uint8_t* now, const uint8_t* twin, size_t n, Fn fn) {
  constexpr size_t kBlock = 64;
  size_t i = 0;
  while (i < n) {
    // Equal blocks are skipped with memcmp, which is much faster than bytes.
    if (i % kBlock == 0 && n - i >= kBlock && std::memcmp(now + i, twin + i, kBlock) == 0) {
      i += kBlock;
      continue;
    }
    if (now[i] == twin[i]) {
      ++i;
      continue;
    }
    size_t end = i + 1;
    for (size_t j = end; j < n && j - end <= kMergeGap; ++j)
      if (now[j] != twin[j]) end = j + 1;
    fn(i, end - i);
    i = end;
  }
}

}  // namespace scuda
