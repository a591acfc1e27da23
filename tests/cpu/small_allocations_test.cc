// The client's carving of small allocations from chunks, on its own.
#include "client/memory/small_allocations.h"

#include <gtest/gtest.h>

#include <set>

namespace scuda::client {
namespace {

constexpr uint64_t kChunk = 2 << 20;
constexpr uint64_t kBase = 0x7f0000000000;

SmallAllocations with_chunks() {
  SmallAllocations s;
  s.set_chunk_size(kChunk);
  return s;
}

TEST(SmallAllocations, ServesUpToHalfAChunk) {
  SmallAllocations s;
  EXPECT_FALSE(s.serves(1)) << "no chunk size yet";
  s.set_chunk_size(kChunk);
  EXPECT_FALSE(s.serves(0));
  EXPECT_TRUE(s.serves(1));
  EXPECT_TRUE(s.serves(kChunk / 2));
  EXPECT_FALSE(s.serves(kChunk / 2 + 1));
  s.set_chunk_size(SmallAllocations::kMinSlot);
  EXPECT_FALSE(s.serves(1)) << "a chunk too small to split";
}

TEST(SmallAllocations, SlotsAreAlignedToTheirClassAndApart) {
  SmallAllocations s = with_chunks();
  EXPECT_EQ(s.take(100), 0u) << "no chunk yet";
  s.add_chunk(kBase, 100);
  std::set<uint64_t> slots;
  for (uint64_t i = 0; i < kChunk / 512; ++i) {
    const uint64_t at = s.take(1 + i % 512);
    ASSERT_NE(at, 0u);
    EXPECT_EQ(at % 512, 0u);
    EXPECT_TRUE(s.in_use(at));
    slots.insert(at);
  }
  EXPECT_EQ(slots.size(), kChunk / 512);
  EXPECT_EQ(*slots.begin(), kBase);
  EXPECT_EQ(*slots.rbegin(), kBase + kChunk - 512);
  EXPECT_EQ(s.take(1), 0u) << "the chunk is full";
  EXPECT_EQ(s.take(513), 0u) << "another class has no chunk";
  s.add_chunk(kBase + kChunk, 3000);
  const uint64_t a = s.take(3000), b = s.take(4096);
  EXPECT_EQ(a, kBase + kChunk);
  EXPECT_EQ(b, a + 4096) << "3000 bytes take a slot of 4096";
}

TEST(SmallAllocations, FreedSlotsAreReusedAndOneIdleChunkPerClassIsKept) {
  SmallAllocations s = with_chunks();
  const uint64_t half = kChunk / 2;
  s.add_chunk(kBase, half);
  const uint64_t a = s.take(half), b = s.take(half);
  s.add_chunk(kBase + kChunk, half);
  const uint64_t c = s.take(half);
  EXPECT_EQ(s.give_back(b), 0u) << "its chunk still holds a";
  EXPECT_FALSE(s.in_use(b));
  EXPECT_EQ(s.give_back(b), 0u) << "twice";
  EXPECT_EQ(s.take(half), b) << "the freed slot first";
  EXPECT_EQ(s.give_back(b), 0u);
  EXPECT_EQ(s.give_back(a), 0u) << "the first idle chunk of its class is kept";
  EXPECT_TRUE(s.chunk_at(kBase));
  EXPECT_EQ(s.give_back(c), kBase + kChunk) << "a second idle chunk goes";
  EXPECT_FALSE(s.chunk_at(kBase + kChunk));
  EXPECT_EQ(s.take(half) / kChunk, kBase / kChunk) << "the kept chunk serves again";
  EXPECT_EQ(s.take(half) / kChunk, kBase / kChunk);
  EXPECT_EQ(s.take(half), 0u) << "the dropped chunk's slots are gone";
}

}  // namespace
}  // namespace scuda::client
