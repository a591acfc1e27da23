// env_number: a bounded whole number from the environment, or the fallback.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "common/config.h"

namespace {

unsigned with(const char* value) {
  setenv("SCUDA_TEST_NUMBER", value, 1);
  const unsigned n = scuda::env_number("SCUDA_TEST_NUMBER", 1, 16, 4);
  unsetenv("SCUDA_TEST_NUMBER");
  return n;
}

TEST(EnvNumber, TakesANumberInItsRange) {
  EXPECT_EQ(with("1"), 1u);
  EXPECT_EQ(with("16"), 16u);
  EXPECT_EQ(with("7"), 7u);
}

TEST(EnvNumber, FallsBackWhenUnsetEmptyOrOutOfRange) {
  EXPECT_EQ(scuda::env_number("SCUDA_TEST_NUMBER_UNSET", 1, 16, 4), 4u);
  EXPECT_EQ(with(""), 4u);
  EXPECT_EQ(with("0"), 4u);
  EXPECT_EQ(with("17"), 4u);
  EXPECT_EQ(with("-1"), 4u);
  EXPECT_EQ(with("3x"), 4u);
  EXPECT_EQ(with("99999999999999999999"), 4u);
}

}  // namespace
