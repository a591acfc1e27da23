// run_main: what a program's main does with an exception nothing caught.
#include "common/main_guard.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace {

TEST(MainGuard, ABodyThatReturnsGivesItsExitCode) {
  testing::internal::CaptureStderr();
  EXPECT_EQ(scuda::run_main("prog", [] { return 7; }), 7);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

TEST(MainGuard, AnExceptionIsToldInOneLineAndExitsOne) {
  testing::internal::CaptureStderr();
  const int rc =
      scuda::run_main("prog", []() -> int { throw std::runtime_error("no free port: Busy"); });
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "prog: no free port: Busy\n");
}

TEST(MainGuard, AnythingElseThrownIsToldToo) {
  testing::internal::CaptureStderr();
  EXPECT_EQ(scuda::run_main("prog", []() -> int { throw 3; }), 1);
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "prog: an unknown error\n");
}

}  // namespace
