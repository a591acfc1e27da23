// The client's allocator of device addresses, on its own.
#include "client/memory/device_addresses.h"

#include <gtest/gtest.h>

namespace scuda::client {
namespace {

constexpr uint64_t kBase = 0x7f0000000000;

TEST(DeviceAddresses, FirstFitReusesHolesAndMergesNeighbours) {
  DeviceAddresses a;
  a.add_range(kBase, 100);
  const uint64_t x = a.take(10), y = a.take(20), z = a.take(30);
  EXPECT_EQ(x, kBase);
  EXPECT_EQ(y, kBase + 10);
  EXPECT_EQ(z, kBase + 30);
  EXPECT_EQ(a.size_at(y), 20u);
  EXPECT_EQ(a.size_at(y + 1), 0u);
  a.give_back(y);
  EXPECT_EQ(a.size_at(y), 0u);
  EXPECT_EQ(a.take(15), y) << "the first hole that fits";
  EXPECT_EQ(a.take(41), 0u) << "no room: 5 + 40 free, apart";
  a.give_back(x);
  a.give_back(y);
  a.give_back(z);
  EXPECT_EQ(a.take(100), kBase) << "freed blocks merge back into one range";
}

TEST(DeviceAddresses, RangesAddUpAndUnknownBlocksAreIgnored) {
  DeviceAddresses a;
  EXPECT_EQ(a.take(1), 0u);
  a.add_range(kBase, 50);
  a.add_range(kBase + 50, 50);
  EXPECT_EQ(a.take(100), kBase) << "adjacent ranges merge";
  a.give_back(kBase + 1);
  EXPECT_EQ(a.take(1), 0u);
  a.add_range(kBase + 1000, 10);
  EXPECT_EQ(a.take(10), kBase + 1000);
}

}  // namespace
}  // namespace scuda::client
