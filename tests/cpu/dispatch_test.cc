// The server's handler tables (server/session/dispatch.h): an op registered twice
// is found, none of the shipped tables registers one twice, and each
// hand-written op it handles has its row in protocol/op_list.h.
#include <gtest/gtest.h>

#include <optional>
#include <span>
#include <vector>

#include "protocol/ops.h"
#include "server/session/dispatch.h"

namespace scuda::server {
namespace {

CUresult nothing(Session&, protocol::Reader&, protocol::Writer&) { return CUDA_SUCCESS; }

TEST(Dispatch, AnOpInTwoTablesIsFound) {
  const HandlerEntry first[] = {{7, nothing}, {9, nothing}};
  const HandlerEntry second[] = {{8, nothing}, {7, nothing}};
  const std::span<const HandlerEntry> tables[] = {first, second};
  EXPECT_EQ(ops_registered_twice(tables), std::vector<uint32_t>{7});
}

TEST(Dispatch, AnOpTwiceInOneTableIsFound) {
  const HandlerEntry table[] = {{5, nothing}, {3, nothing}, {5, nothing}};
  const std::span<const HandlerEntry> tables[] = {table};
  EXPECT_EQ(ops_registered_twice(tables), std::vector<uint32_t>{5});
}

TEST(Dispatch, EveryHandledHandWrittenOpIsOneAClientSends) {
  size_t hand_written = 0;
  for (uint32_t op : handled_ops()) {
    const std::optional<protocol::OpWay> way = protocol::op_way(op);
    if (op < protocol::kFirstGeneratedOp) {
      ASSERT_TRUE(way.has_value()) << op << " has no row in op_list.h";
      ++hand_written;
    }
    if (!way) continue;
    EXPECT_NE(*way, protocol::OpWay::kHandshake) << protocol::op_name(op);
    EXPECT_NE(*way, protocol::OpWay::kToClient) << protocol::op_name(op);
    EXPECT_NE(*way, protocol::OpWay::kOnChannel) << protocol::op_name(op);
  }
  EXPECT_GT(hand_written, 50u);
}

TEST(Dispatch, HandWrittenOpsHaveTheirOwnNames) {
  EXPECT_STREQ(protocol::op_name(protocol::kOpMemcpyHtoD), "memcpy-htod");
  EXPECT_STREQ(protocol::op_name(protocol::kOpStatus), "status");
  EXPECT_STREQ(protocol::op_name(protocol::kOpPeerReceive), "peer-receive");
  EXPECT_STREQ(protocol::op_name(999), "unknown");
  EXPECT_EQ(protocol::op_way(protocol::kOpLaunch), protocol::OpWay::kOneWay);
  EXPECT_EQ(protocol::op_way(protocol::kOpVaReserve), protocol::OpWay::kAnswered);
  EXPECT_EQ(protocol::op_way(protocol::kFirstGeneratedOp), std::nullopt);
}

TEST(Dispatch, TheServersTablesRegisterEachOpOnce) {
  EXPECT_EQ(ops_registered_twice(), std::vector<uint32_t>{});
  EXPECT_FALSE(handled_ops().empty());
}

}  // namespace
}  // namespace scuda::server
