// RankedMutex's check (common/lock_order.h): locks taken in rank order are
// taken; one taken while a lock of its rank or a higher one is held aborts,
// naming both.
#include <gtest/gtest.h>

#include <mutex>

#include "common/lock_order.h"

namespace scuda {
namespace {

#ifndef SCUDA_CHECK_LOCK_ORDER

TEST(LockOrder, IsCheckedInTheTestBuild) {
  FAIL() << "built without SCUDA_CHECK_LOCK_ORDER: configure with -DSCUDA_CHECK_LOCK_ORDER=ON";
}

#else

class LockOrder : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }

  RankedMutex connection_{LockRank::kConnection, "connection"};
  RankedMutex pages_{LockRank::kCoherence, "pages"};
  RankedMutex table_{LockRank::kLeaf, "table"};
  RankedMutex other_table_{LockRank::kLeaf, "other table"};
  RankedMutex stats_{LockRank::kStats, "stats"};
};

TEST_F(LockOrder, LocksInRankOrderAreTakenAndReleased) {
  {
    std::lock_guard a(connection_);
    std::lock_guard b(pages_);
    std::lock_guard c(table_);
    std::lock_guard d(stats_);
  }
  // Nothing is held any more: a low rank after a high one is fine.
  std::lock_guard e(stats_);
}

TEST_F(LockOrder, ALowerRankUnderAHigherOneAborts) {
  EXPECT_DEATH(
      {
        std::lock_guard a(pages_);
        std::lock_guard b(connection_);
      },
      "lock order broken: taking connection \\(rank 30\\) while holding pages \\(rank 40\\)");
}

TEST_F(LockOrder, TwoLocksOfOneRankAreNeverNested) {
  EXPECT_DEATH(
      {
        std::lock_guard a(table_);
        std::lock_guard b(other_table_);
      },
      "taking other table \\(rank 80\\) while holding table \\(rank 80\\)");
}

TEST_F(LockOrder, ALockReleasedOutOfOrderIsForgotten) {
  std::unique_lock a(connection_);
  std::unique_lock b(table_);
  a.unlock();
  // The table is still held, the connection no longer.
  EXPECT_DEATH({ std::lock_guard c(pages_); }, "taking pages \\(rank 40\\) while holding table");
  b.unlock();
  std::lock_guard c(pages_);
  std::lock_guard d(stats_);
}

TEST_F(LockOrder, TryLockNeverWaitsSoItMayGoAgainstTheOrder) {
  std::lock_guard a(pages_);
  std::unique_lock b(connection_, std::try_to_lock);
  ASSERT_TRUE(b.owns_lock());
  // And what it took counts as held.
  EXPECT_DEATH({ std::lock_guard c(connection_); },
               "taking connection \\(rank 30\\) while holding");
}

#endif  // SCUDA_CHECK_LOCK_ORDER

}  // namespace
}  // namespace scuda
