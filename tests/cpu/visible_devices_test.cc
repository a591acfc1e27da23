// How a session reads its client's CUDA_VISIBLE_DEVICES against the GPUs
// the server offers (server/listener/visible_devices.h).
#include <gtest/gtest.h>

#include "server/listener/visible_devices.h"

namespace scuda::server {
namespace {

using List = std::vector<size_t>;
const std::vector<std::string> kOffered = {"GPU-aaaa1111-0000", "GPU-aaaa2222-0000",
                                           "GPU-bbbb3333-0000"};

TEST(VisibleDevices, IndicesPickInTheClientsOrder) {
  EXPECT_EQ(pick_visible("2,0", kOffered), (List{2, 0}));
  EXPECT_EQ(pick_visible(" 1 , 2", kOffered), (List{1, 2}));
}

TEST(VisibleDevices, UuidPrefixesNameOneGpuCaseAside) {
  EXPECT_EQ(pick_visible("GPU-bbbb", kOffered), (List{2}));
  EXPECT_EQ(pick_visible("gpu-AAAA2222", kOffered), (List{1}));
  EXPECT_EQ(pick_visible("GPU-aaaa", kOffered), List{});  // names two
  EXPECT_EQ(pick_visible("GPU-", kOffered), List{});
}

TEST(VisibleDevices, ReadingStopsAtTheFirstEntryThatNamesNoneOrRepeats) {
  EXPECT_EQ(pick_visible("1,3,0", kOffered), (List{1}));
  EXPECT_EQ(pick_visible("0,GPU-aaaa1111,2", kOffered), (List{0}));
  EXPECT_EQ(pick_visible("0,-1,2", kOffered), (List{0}));
  EXPECT_EQ(pick_visible("0,,2", kOffered), (List{0}));
  EXPECT_EQ(pick_visible("MIG-1234", kOffered), List{});
  EXPECT_EQ(pick_visible("", kOffered), List{});
  EXPECT_EQ(pick_visible("99999999999999999999", kOffered), List{});
}

TEST(VisibleDevices, ListsFromTheNetworkArePrintedSafely) {
  EXPECT_EQ(printable("0,\n\x1b[2J\xff"
                      "1"),
            "0,??[2J?1");
  EXPECT_EQ(printable(std::string(300, '1')).size(), 200u);
}

// The session's list names the chosen GPUs as the server's own list does
// (a MIG instance by its MIG- UUID), or by index when the server has none.
TEST(VisibleDevices, TheSessionsListNamesTheChosenAsTheServersListDoes) {
  EXPECT_EQ(session_visible({2, 0}, nullptr), "2,0");
  EXPECT_EQ(session_visible({1}, "3, MIG-1234-abcd ,GPU-9"), "MIG-1234-abcd");
  EXPECT_EQ(session_visible({2, 0}, "3,MIG-1234,GPU-9"), "GPU-9,3");
}

}  // namespace
}  // namespace scuda::server
