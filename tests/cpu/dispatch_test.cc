// The server's handler tables (server/dispatch.h): an op registered twice
// is found, and none of the shipped tables registers one twice.
#include <gtest/gtest.h>

#include <span>
#include <vector>

#include "server/dispatch.h"

namespace scuda::server {
namespace {

CUresult nothing(Session&, protocol::Reader&, protocol::Writer&) { return CUDA_SUCCESS; }

TEST(Dispatch, AnOpInTwoTablesIsFound) {
  const HandlerEntry first[] = {{7, nothing, "seven"}, {9, nothing, "nine"}};
  const HandlerEntry second[] = {{8, nothing, "eight"}, {7, nothing, "seven again"}};
  const std::span<const HandlerEntry> tables[] = {first, second};
  EXPECT_EQ(ops_registered_twice(tables), std::vector<uint32_t>{7});
}

TEST(Dispatch, AnOpTwiceInOneTableIsFound) {
  const HandlerEntry table[] = {{5, nothing, "five"}, {3, nothing, "three"}, {5, nothing, "five"}};
  const std::span<const HandlerEntry> tables[] = {table};
  EXPECT_EQ(ops_registered_twice(tables), std::vector<uint32_t>{5});
}

TEST(Dispatch, TheServersTablesRegisterEachOpOnce) {
  EXPECT_EQ(ops_registered_twice(), std::vector<uint32_t>{});
  EXPECT_FALSE(handled_ops().empty());
}

}  // namespace
}  // namespace scuda::server
