// The live mirrors' word exchange (common/live_words.h): which words travel,
// as one snapshot, and how the other side writes them.
#include "common/live_words.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstring>
#include <thread>
#include <vector>

namespace {

using scuda::live::Block;
using scuda::live::Landing;
using Runs = std::vector<scuda::live::Run>;

uint8_t* bytes(std::vector<uint64_t>& v) { return reinterpret_cast<uint8_t*>(v.data()); }

Runs take(std::vector<Block> blocks, scuda::live::ScanThreads* threads = nullptr) {
  Runs runs;
  scuda::live::take_snapshot(blocks, &runs, threads);
  return runs;
}

// Four threads sharing the scans; never freed (their threads never end).
scuda::live::ScanThreads* four_threads() {
  static auto* const threads = new scuda::live::ScanThreads(4);
  return threads;
}

// One word received into `memory` (at address 0x1000) whose twin is `twin`.
void receive(uint64_t* memory, uint64_t* twin, uint64_t sent) {
  const Landing l{0x1000, reinterpret_cast<uint8_t*>(memory), reinterpret_cast<uint8_t*>(twin),
                  std::string_view(reinterpret_cast<const char*>(&sent), 8)};
  scuda::live::apply_turn({&l, 1});
}

TEST(LiveWords, ChangedWordsOfEveryBlockTravelInAscendingRunsAndTheTwinsCatchUp) {
  std::vector<uint64_t> low(2048, 0), high(512, 0), twin_low(2048, 0), twin_high(512, 0);
  low[3] = 7;
  low[4] = 8;
  low[1500] = 9;  // in another 4 KiB of the block
  high[0] = 10;
  const std::vector<Block> blocks = {{0x10000, bytes(low), bytes(twin_low), low.size() * 8},
                                     {0x40000, bytes(high), bytes(twin_high), high.size() * 8}};
  Runs runs = take(blocks);
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].address, 0x10000u + 3 * 8);
  ASSERT_EQ(runs[0].bytes.size(), 16u);
  uint64_t first[2];
  std::memcpy(first, runs[0].bytes.data(), 16);
  EXPECT_EQ(first[0], 7u);
  EXPECT_EQ(first[1], 8u);
  EXPECT_EQ(runs[1].address, 0x10000u + 1500 * 8);
  EXPECT_EQ(runs[2].address, 0x40000u);
  EXPECT_EQ(twin_low, low);
  EXPECT_EQ(twin_high, high);
  EXPECT_TRUE(take(blocks).empty()) << "a word sent once is not sent again";
}

TEST(LiveWords, TakeSnapshotSaysWhichBlocksChanged) {
  std::vector<uint64_t> a(8, 0), b(8, 0), twin_a(8, 0), twin_b(8, 0);
  b[5] = 1;
  std::vector<Block> blocks = {{0x1000, bytes(a), bytes(twin_a), 64},
                               {0x2000, bytes(b), bytes(twin_b), 64}};
  Runs runs;
  scuda::live::take_snapshot(blocks, &runs);
  EXPECT_FALSE(blocks[0].changed);
  EXPECT_TRUE(blocks[1].changed);
}

// A writer here stores a word and then another, at a lower address (NCCL's
// proxy resets a FIFO slot, then raises the head below it), or at a higher
// one (a kernel writes data, then the counter above it), pausing until the
// other side has seen its last pair. Whatever the timing, a snapshot never
// carries the second word of a pair without the first: the words lie in
// different pieces of the threads' scans, and in different blocks.
void expect_snapshots_in_order(scuda::live::ScanThreads* threads) {
  constexpr size_t kWords = 1 << 18, kHigh = kWords - 16, kLow = 8, kData = 100;
  constexpr size_t kFlag = kWords / 2 + 8;  // in the second block
  constexpr uint64_t kPairs = 400;
  std::vector<uint64_t> memory(kWords, 0), twin(kWords, 0), other(kWords, 0);
  std::atomic<uint64_t> seen{0};
  std::thread writer([&] {
    for (uint64_t i = 1; i <= kPairs; ++i) {
      while (seen.load() < i - 1) std::this_thread::yield();
      std::atomic_ref<uint64_t>(memory[kHigh]).store(i);
      for (volatile int spin = static_cast<int>(i % 64) * 20; spin > 0;) spin = spin - 1;
      std::atomic_ref<uint64_t>(memory[kLow]).store(i);
      std::atomic_ref<uint64_t>(memory[kData]).store(i);
      for (volatile int spin = static_cast<int>(i % 48) * 20; spin > 0;) spin = spin - 1;
      std::atomic_ref<uint64_t>(memory[kFlag]).store(i);
    }
  });
  constexpr size_t kHalf = kWords / 2 * 8;
  const std::vector<Block> blocks = {
      {0x1000000, bytes(memory), bytes(twin), kHalf},
      {0x1000000 + kHalf, bytes(memory) + kHalf, bytes(twin) + kHalf, kHalf}};
  uint64_t broken = 0;
  while (seen.load() < kPairs) {
    for (const auto& run : take(blocks, threads))
      std::memcpy(other.data() + (run.address - 0x1000000) / 8, run.bytes.data(), run.bytes.size());
    broken += other[kLow] > other[kHigh] || other[kFlag] > other[kData];
    seen.store(other[kFlag]);
  }
  writer.join();
  EXPECT_EQ(broken, 0u) << "snapshots with a word but not the one written before it";
}

TEST(LiveWords, ASnapshotNeverCarriesAWordWithoutTheWordsWrittenBeforeIt) {
  expect_snapshots_in_order(nullptr);
}

TEST(LiveWords, ASnapshotScannedByThreadsKeepsTheOrderToo) {
  expect_snapshots_in_order(four_threads());
}

TEST(LiveWords, ThreadsFindTheSameChangesAsOneThread) {
  std::vector<uint64_t> memory(1 << 19, 0), twin(1 << 19, 0);
  for (size_t w : {0, 1, 131071, 131072, 300000, 524287}) memory[w] = w + 1;
  const Runs runs =
      take({{0x2000000, bytes(memory), bytes(twin), memory.size() * 8}}, four_threads());
  ASSERT_EQ(runs.size(), 4u) << "words 131071 and 131072 straddle two pieces: one run";
  EXPECT_EQ(runs[0].address, 0x2000000u);
  EXPECT_EQ(runs[0].bytes.size(), 16u);
  EXPECT_EQ(runs[1].address, 0x2000000u + 131071 * 8);
  EXPECT_EQ(runs[1].bytes.size(), 16u);
  EXPECT_EQ(runs[3].address, 0x2000000u + 524287 * 8);
  EXPECT_EQ(twin, memory);
}

// A half the sender did not change is left as this side has it: a thread
// here may have written it meanwhile, and its own turn will send it.
TEST(LiveWords, AHalfTheOtherSideLeftAloneIsNotOverwritten) {
  uint64_t memory = 0x0000000500000001, twin = 0x0000000100000001;  // high half written here
  receive(&memory, &twin, 0x0000000100000002);                      // low half changed there
  EXPECT_EQ(memory, 0x0000000500000002u);
  EXPECT_EQ(twin, 0x0000000100000002u);
}

TEST(LiveWords, AWordWhoseHalvesBothChangedIsWrittenWhole) {
  uint64_t memory = 0, twin = 0;
  receive(&memory, &twin, 0x0000000300000004);
  EXPECT_EQ(memory, 0x0000000300000004u);
}

// Both sides wrote the word since they last traded it: this side's value
// stays (the other side's came first) and travels back on the next turn.
TEST(LiveWords, AWordThisSideRewroteMeanwhileKeepsThisSidesValue) {
  uint64_t memory = 0x0000000000000009, twin = 0x0000000000000001;  // rewritten here: 9
  receive(&memory, &twin, 0x00000000ffffffff);                      // reset there
  EXPECT_EQ(memory, 9u);
  EXPECT_EQ(twin, 0x00000000ffffffffu);
  const Runs runs = take(
      {{0x1000, reinterpret_cast<const uint8_t*>(&memory), reinterpret_cast<uint8_t*>(&twin), 8}});
  ASSERT_EQ(runs.size(), 1u);
  uint64_t back = 0;
  std::memcpy(&back, runs[0].bytes.data(), 8);
  EXPECT_EQ(back, 9u);
}

// Counters are written after every other word of a turn; a data word taken
// for one would be written late, so the test is narrow.
TEST(LiveWords, ACounterStartsALineAloneAndGrowsByASmallStep) {
  using scuda::live::is_counter;
  EXPECT_TRUE(is_counter(0x1080, 6, 8, true));
  EXPECT_FALSE(is_counter(0x1088, 6, 8, true)) << "not at the start of a 128-byte line";
  EXPECT_FALSE(is_counter(0x1080, 6, 8, false)) << "another word of its line changed";
  EXPECT_FALSE(is_counter(0x1080, 8, 6, true)) << "went down";
  EXPECT_FALSE(is_counter(0x1080, ~0ull, 8, true)) << "a FIFO size filled after a reset";
  EXPECT_FALSE(is_counter(0x1080, 6, 1u << 20, true)) << "a jump, as data makes";
}

TEST(LiveWords, ATurnStoresCountersAndTheRestAlike) {
  std::vector<uint64_t> memory(32, 0), twin(32, 0), sent(32, 0);
  sent[0] = 3;                       // a counter: alone in its line, grew by 3
  sent[16] = sent[17] = 0xabcdef12;  // data
  std::vector<Landing> landings;
  for (size_t w : {0, 16})
    landings.push_back({0x2000 + w * 8, bytes(memory) + w * 8, bytes(twin) + w * 8,
                        std::string_view(reinterpret_cast<const char*>(&sent[w]), w ? 16 : 8)});
  scuda::live::apply_turn(landings);
  EXPECT_EQ(memory, sent);
  EXPECT_EQ(twin, sent);
}

}  // namespace
