// The session's checks of client-chosen device addresses, on their own.
#include "server/memory/va_space.h"

#include <gtest/gtest.h>

namespace scuda::server {
namespace {

constexpr uint64_t kG = 2 << 20;
constexpr uint64_t kBase = 0x7f0000000000;

TEST(VaSpace, MapsMustBeAlignedInsideOneReservationAndClearOfOthers) {
  VaSpace va;
  EXPECT_FALSE(va.can_map(kBase, kG)) << "nothing reserved yet";
  va.add_reservation(kBase, 8 * kG, kG, 0);
  EXPECT_TRUE(va.can_map(kBase, 8 * kG));
  EXPECT_FALSE(va.can_map(kBase, 0));
  EXPECT_FALSE(va.can_map(kBase + 1, kG)) << "unaligned address";
  EXPECT_FALSE(va.can_map(kBase, kG + 4096)) << "unaligned size";
  EXPECT_FALSE(va.can_map(kBase - kG, 2 * kG)) << "starts below the reservation";
  EXPECT_FALSE(va.can_map(kBase + 7 * kG, 2 * kG)) << "ends past it";
  EXPECT_FALSE(va.can_map(kBase + 8 * kG, kG));
  EXPECT_FALSE(va.can_map(kBase, ~uint64_t{0} - kG + 1)) << "wraps around";
  va.add_mapping(kBase + 2 * kG, 2 * kG);
  EXPECT_FALSE(va.can_map(kBase + 2 * kG, kG)) << "same start";
  EXPECT_FALSE(va.can_map(kBase + 3 * kG, kG)) << "inside";
  EXPECT_FALSE(va.can_map(kBase + kG, 2 * kG)) << "overlaps its start";
  EXPECT_FALSE(va.can_map(kBase, 8 * kG)) << "covers it";
  EXPECT_TRUE(va.can_map(kBase, 2 * kG)) << "ends where it starts";
  EXPECT_TRUE(va.can_map(kBase + 4 * kG, 4 * kG)) << "starts where it ends";
  EXPECT_EQ(va.mapping_size(kBase + 2 * kG), 2 * kG);
  EXPECT_EQ(va.mapping_size(kBase + 3 * kG), 0u);
  va.remove_mapping(kBase + 2 * kG);
  EXPECT_TRUE(va.can_map(kBase, 8 * kG));
}

TEST(VaSpace, ReservationsAreBounded) {
  VaSpace va;
  for (size_t i = 0; i < VaSpace::kMaxReservations; ++i) {
    EXPECT_FALSE(va.full());
    va.add_reservation(kBase + i * 16 * kG, 8 * kG, kG, 0);
  }
  EXPECT_TRUE(va.full());
  EXPECT_FALSE(va.can_map(kBase + 8 * kG, kG)) << "between two reservations";
}

TEST(VaSpace, EachReservationBelongsToItsDevice) {
  VaSpace va;
  va.add_reservation(kBase, 8 * kG, kG, 0);
  va.add_reservation(kBase + 16 * kG, 8 * kG, kG, 1);
  EXPECT_EQ(va.owner(kBase), 0);
  EXPECT_EQ(va.owner(kBase + 8 * kG - 1), 0);
  EXPECT_EQ(va.owner(kBase + 8 * kG), -1) << "between the two";
  EXPECT_EQ(va.owner(kBase + 16 * kG), 1);
  EXPECT_EQ(va.owner(kBase + 24 * kG - 1), 1);
  EXPECT_EQ(va.owner(kBase - 1), -1);
}

}  // namespace
}  // namespace scuda::server
