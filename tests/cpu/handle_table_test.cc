// The session's handle table: ids the client proposes, and driver handles
// whose addresses the driver reuses after an object is destroyed.
#include <gtest/gtest.h>

#include "server/session/handles.h"

namespace {

using scuda::server::HandleKind;
using scuda::server::HandleTable;

void* address(uintptr_t a) { return reinterpret_cast<void*>(a); }

TEST(HandleTable, AnAnsweredBindOfAKnownHandleReturnsItsId) {
  HandleTable t;
  EXPECT_EQ(t.bind(10, HandleKind::CUcontext, address(0x1000)), 10u);
  EXPECT_EQ(t.bind(11, HandleKind::CUcontext, address(0x1000)), 10u);
  void* real = nullptr;
  EXPECT_FALSE(t.resolve(11, HandleKind::CUcontext, &real));
}

// A module's functions are aliases that its unload does not forget; a new
// stream the driver places at one's address, created one-way, must answer
// to the id the client proposed.
TEST(HandleTable, AOneWayCreateBindsTheProposedIdOverAStaleOne) {
  HandleTable t;
  t.alias(20, HandleKind::CUfunction, address(0x2000));
  EXPECT_EQ(t.bind(21, HandleKind::CUstream, address(0x2000), false), 21u);
  void* real = nullptr;
  ASSERT_TRUE(t.resolve(21, HandleKind::CUstream, &real));
  EXPECT_EQ(real, address(0x2000));
  EXPECT_EQ(t.find(address(0x2000)), 21u);
}

TEST(HandleTable, AnIdKnownAsAnotherKindIsNotReturned) {
  HandleTable t;
  t.alias(30, HandleKind::CUfunction, address(0x3000));
  EXPECT_EQ(t.bind(31, HandleKind::CUevent, address(0x3000)), 31u);
  void* real = nullptr;
  EXPECT_TRUE(t.resolve(31, HandleKind::CUevent, &real));
  EXPECT_FALSE(t.resolve(30, HandleKind::CUevent, &real));
}

// A library loaded without the driver's own copy reads the session's until
// it is unloaded: the table keeps those bytes exactly that long.
TEST(HandleTable, LentBytesLiveUntilTheirHandleIsForgotten) {
  HandleTable t;
  ASSERT_EQ(t.bind(40, HandleKind::CUlibrary, address(0x4000)), 40u);
  auto bytes = std::make_shared<const std::string>("image");
  std::weak_ptr<const std::string> watch = bytes;
  t.lend(40, std::move(bytes));
  EXPECT_FALSE(watch.expired());
  t.lend(41, std::make_shared<const std::string>("no such handle"));  // ignored
  t.forget(40);
  EXPECT_TRUE(watch.expired());
}

}  // namespace
