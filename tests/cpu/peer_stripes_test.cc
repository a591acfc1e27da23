// How a copy between servers is cut into stripes (server/copies/peer_copies.h):
// the stripes cover the copy exactly, none but the last is shorter than the
// least stripe, and there are never more than the streams a copy takes.
#include <gtest/gtest.h>

#include <cstdint>

#include "server/copies/peer_copies.h"

namespace {

using scuda::server::kPeerMinStripe;
using scuda::server::kPeerStreams;
using scuda::server::stripes_of;

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(PeerStripes, CoverTheCopyExactlyWithNoEmptyStripe) {
  for (const uint64_t size :
       {uint64_t{1}, kPeerMinStripe - 1, kPeerMinStripe, kPeerMinStripe + 1, 16 * kMiB,
        16 * kMiB + 12345, 24 * kMiB - 1, 256 * kMiB + 7, uint64_t{1} << 40}) {
    const scuda::server::Stripes plan = stripes_of(size);
    ASSERT_GE(plan.count, 1u) << size;
    ASSERT_LE(plan.count, kPeerStreams) << size;
    const uint64_t last = size - (plan.count - 1) * plan.length;
    EXPECT_GT(last, 0u) << "the last stripe of a copy of " << size << " bytes is empty";
    EXPECT_LE(last, plan.length) << size;
    if (plan.count > 1) {
      EXPECT_GE(plan.length, kPeerMinStripe / 2) << size;
    }
  }
}

TEST(PeerStripes, LargeCopiesTakeEveryStreamAndSmallOnesOne) {
  EXPECT_EQ(stripes_of(16 * kMiB).count, kPeerStreams);
  EXPECT_EQ(stripes_of(16 * kMiB).length, 4 * kMiB);
  EXPECT_EQ(stripes_of(1 << 30).count, kPeerStreams);
  EXPECT_EQ(stripes_of(kPeerMinStripe).count, 1u);
  EXPECT_EQ(stripes_of(kPeerMinStripe + 1).count, 2u);
  EXPECT_EQ(stripes_of(0).count, 1u);
  EXPECT_EQ(stripes_of(0).length, 0u);
}

}  // namespace
