// The live mirrors' word exchange (common/live_words.h): which words travel,
// in what order, and how the other side writes them.
#include "common/live_words.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace {

using Runs = std::vector<scuda::live::Run>;

TEST(LiveWords, ChangedWordsTravelInAscendingRunsAndTheTwinCatchesUp) {
  std::vector<uint64_t> now(2048, 0), twin(2048, 0);
  now[3] = 7;
  now[4] = 8;
  now[1500] = 9;  // in another 4 KiB block
  Runs runs;
  scuda::live::take_changes(0x10000, reinterpret_cast<const uint8_t*>(now.data()),
                            reinterpret_cast<uint8_t*>(twin.data()), now.size() * 8, &runs);
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].address, 0x10000u + 3 * 8);
  ASSERT_EQ(runs[0].bytes.size(), 16u);
  uint64_t first[2];
  std::memcpy(first, runs[0].bytes.data(), 16);
  EXPECT_EQ(first[0], 7u);
  EXPECT_EQ(first[1], 8u);
  EXPECT_EQ(runs[1].address, 0x10000u + 1500 * 8);
  EXPECT_EQ(twin, now);
  runs.clear();
  scuda::live::take_changes(0x10000, reinterpret_cast<const uint8_t*>(now.data()),
                            reinterpret_cast<uint8_t*>(twin.data()), now.size() * 8, &runs);
  EXPECT_TRUE(runs.empty()) << "a word sent once is not sent again";
}

// A half the sender did not change is left as this side has it: a thread
// here may have written it meanwhile, and its own turn will send it.
TEST(LiveWords, AHalfTheOtherSideLeftAloneIsNotOverwritten) {
  uint64_t memory = 0x0000000500000001, twin = 0x0000000100000001;  // high half written here
  const uint64_t sent = 0x0000000100000002;                         // low half changed there
  scuda::live::apply(reinterpret_cast<uint8_t*>(&memory), reinterpret_cast<uint8_t*>(&twin),
                     std::string_view(reinterpret_cast<const char*>(&sent), 8));
  EXPECT_EQ(memory, 0x0000000500000002u);
  EXPECT_EQ(twin, sent);
}

TEST(LiveWords, AWordWhoseHalvesBothChangedIsWrittenWhole) {
  uint64_t memory = 0, twin = 0;  // both halves change there
  const uint64_t sent = 0x0000000300000004;
  scuda::live::apply(reinterpret_cast<uint8_t*>(&memory), reinterpret_cast<uint8_t*>(&twin),
                     std::string_view(reinterpret_cast<const char*>(&sent), 8));
  EXPECT_EQ(memory, sent);
}

// Both sides wrote the word since they last traded it: this side's value
// stays (the other side's came first) and travels back on the next turn.
TEST(LiveWords, AWordThisSideRewroteMeanwhileKeepsThisSidesValue) {
  uint64_t memory = 0x0000000000000009, twin = 0x0000000000000001;  // rewritten here: 9
  const uint64_t sent = 0x00000000ffffffff;                         // reset there
  scuda::live::apply(reinterpret_cast<uint8_t*>(&memory), reinterpret_cast<uint8_t*>(&twin),
                     std::string_view(reinterpret_cast<const char*>(&sent), 8));
  EXPECT_EQ(memory, 9u);
  EXPECT_EQ(twin, sent);
  Runs runs;
  scuda::live::take_changes(0, reinterpret_cast<const uint8_t*>(&memory),
                            reinterpret_cast<uint8_t*>(&twin), 8, &runs);
  ASSERT_EQ(runs.size(), 1u);
  uint64_t back = 0;
  std::memcpy(&back, runs[0].bytes.data(), 8);
  EXPECT_EQ(back, 9u);
}

}  // namespace
