// env_number: a bounded whole number from the environment, or the fallback.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "common/config.h"
#include "common/log.h"

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

TEST(LogLevel, NamedLevelsAreTakenAndUnknownOnesKeepTheDefault) {
  std::string complaint;
  EXPECT_EQ(scuda::log_level_named("debug", spdlog::level::warn, &complaint),
            spdlog::level::debug);
  EXPECT_EQ(scuda::log_level_named("off", spdlog::level::warn, &complaint), spdlog::level::off);
  EXPECT_TRUE(complaint.empty());
  EXPECT_EQ(scuda::log_level_named("loud", spdlog::level::warn, &complaint), spdlog::level::warn);
  EXPECT_NE(complaint.find("SCUDA_LOG_LEVEL=loud names no log level"), std::string::npos)
      << complaint;
  EXPECT_NE(complaint.find("using warning"), std::string::npos) << complaint;
}
