// env_number: a bounded whole number from the environment, or the fallback.
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>

#include <memory>
#include <sstream>

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

// A bad value's warning says what is used instead: the fallback's value, or
// what the caller names.
TEST(EnvNumber, TheWarningSaysWhatIsUsedInstead) {
  std::ostringstream out;
  const auto before = spdlog::default_logger();
  spdlog::set_default_logger(std::make_shared<spdlog::logger>(
      "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(out)));
  setenv("SCUDA_TEST_NUMBER", "x", 1);
  EXPECT_EQ(scuda::env_number("SCUDA_TEST_NUMBER", 1, 16, 0, "the server's default"), 0u);
  EXPECT_EQ(scuda::env_number("SCUDA_TEST_NUMBER", 1, 16, 4), 4u);
  unsetenv("SCUDA_TEST_NUMBER");
  spdlog::set_default_logger(before);
  EXPECT_NE(out.str().find("is not a number from 1 to 16; using the server's default"),
            std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("is not a number from 1 to 16; using 4"), std::string::npos)
      << out.str();
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

TEST(LogLevel, NamedLevelsAreTakenAndUnknownOnesListTheLevels) {
  std::string error;
  spdlog::level::level_enum level = spdlog::level::warn;
  EXPECT_TRUE(scuda::log_level_named("debug", &level, &error));
  EXPECT_EQ(level, spdlog::level::debug);
  EXPECT_TRUE(scuda::log_level_named("off", &level, &error));
  EXPECT_EQ(level, spdlog::level::off);
  EXPECT_TRUE(error.empty());
  EXPECT_FALSE(scuda::log_level_named("loud", &level, &error));
  EXPECT_EQ(level, spdlog::level::off) << "an unknown name leaves the level as it was";
  EXPECT_NE(error.find("SCUDA_LOG_LEVEL=loud names no log level"), std::string::npos) << error;
  EXPECT_NE(error.find("trace, debug, info, warn, error, critical and off"), std::string::npos)
      << error;
}
