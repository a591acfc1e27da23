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

namespace changed_runs_detail {

inline uint64_t word_at(const uint8_t* p) {
  uint64_t w;
  std::memcpy(&w, p, sizeof w);
  return w;
}

// The end of the run that starts at `i` (a changed byte): one past its last
// changed byte, where no other changes within kMergeGap follow. Whole words
// that differ are taken eight bytes at a time while every byte of them lies
// in the merge window, which is where nearly all of a rewritten buffer's
// bytes are; the result is the same as a byte-by-byte scan's.
inline size_t run_end(const uint8_t* now, const uint8_t* twin, size_t n, size_t i) {
  size_t end = i + 1;
  for (size_t j = end; j < n && j - end <= kMergeGap;) {
    if (n - j >= 8 && j + 8 - end <= kMergeGap + 1) {
      const uint64_t x = word_at(now + j) ^ word_at(twin + j);
      if (x != 0) end = j + (63 - static_cast<size_t>(__builtin_clzll(x))) / 8 + 1;
      j += 8;
      continue;
    }
    if (now[j] != twin[j]) end = j + 1;
    ++j;
  }
  return end;
}

}  // namespace changed_runs_detail

// Calls fn(offset, size) for each run of bytes where `now` differs from
// `twin` in [0, n), runs at most kMergeGap apart merged.
template <class Fn>
void for_each_changed_run(const uint8_t* now, const uint8_t* twin, size_t n, Fn fn) {
  constexpr size_t kPage = 4096, kBlock = 64;
  size_t i = 0;
  while (i < n) {
    // Equal pages, then equal blocks, are skipped with memcmp, which is much
    // faster than bytes.
    if (i % kPage == 0 && n - i >= kPage && std::memcmp(now + i, twin + i, kPage) == 0) {
      i += kPage;
      continue;
    }
    if (i % kBlock == 0 && n - i >= kBlock && std::memcmp(now + i, twin + i, kBlock) == 0) {
      i += kBlock;
      continue;
    }
    if (now[i] == twin[i]) {
      ++i;
      continue;
    }
    const size_t end = changed_runs_detail::run_end(now, twin, n, i);
    fn(i, end - i);
    i = end;
  }
}

}  // namespace scuda
