// for_each_changed_run against the plain byte-by-byte scan it must agree
// with, on buffers changed at random: sparse bytes, whole stretches, and
// changes just inside and just past the merge gap.
#include "common/changed_runs.h"

#include <gtest/gtest.h>

#include <random>
#include <utility>
#include <vector>

namespace {

using Runs = std::vector<std::pair<size_t, size_t>>;

Runs reference(const std::vector<uint8_t>& now, const std::vector<uint8_t>& twin) {
  Runs out;
  const size_t n = now.size();
  for (size_t i = 0; i < n;) {
    if (now[i] == twin[i]) {
      ++i;
      continue;
    }
    size_t end = i + 1;
    for (size_t j = end; j < n && j - end <= scuda::kMergeGap; ++j)
      if (now[j] != twin[j]) end = j + 1;
    out.push_back({i, end - i});
    i = end;
  }
  return out;
}

Runs found(const std::vector<uint8_t>& now, const std::vector<uint8_t>& twin) {
  Runs out;
  scuda::for_each_changed_run(now.data(), twin.data(), now.size(), [&](size_t at, size_t n) {
    out.push_back({at, n});
  });
  return out;
}

TEST(ChangedRuns, AgreesWithAByteByByteScan) {
  std::mt19937 rng(7);
  for (int round = 0; round < 300; ++round) {
    const size_t n = 1 + rng() % 20000;
    std::vector<uint8_t> twin(n);
    for (auto& b : twin) b = static_cast<uint8_t>(rng());
    std::vector<uint8_t> now = twin;
    const int stretches = static_cast<int>(rng() % 6);
    for (int s = 0; s < stretches; ++s) {
      const size_t at = rng() % n, len = 1 + rng() % 5000;
      for (size_t k = at; k < n && k < at + len; ++k)
        if (rng() % 16) now[k] = static_cast<uint8_t>(twin[k] + 1);  // holes of equal bytes
    }
    const int singles = static_cast<int>(rng() % 40);
    for (int s = 0; s < singles; ++s) {
      const size_t at = rng() % n;
      now[at] ^= 0x80;
      if (at + scuda::kMergeGap + 1 + rng() % 3 < n) now[at + scuda::kMergeGap + 1] ^= 1;
    }
    ASSERT_EQ(found(now, twin), reference(now, twin)) << "round " << round << ", " << n << " bytes";
  }
}

TEST(ChangedRuns, AWhollyRewrittenBufferIsOneRun) {
  std::vector<uint8_t> twin(1 << 20, 0), now(1 << 20, 1);
  EXPECT_EQ(found(now, twin), (Runs{{0, size_t{1} << 20}}));
  EXPECT_TRUE(found(twin, twin).empty());
}

}  // namespace
