// The CLI as a new user meets it: its start line, its refusals and what it
// says when a setting is wrong, each from a real `scuda` process.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

#include "server_process.h"

namespace scuda {
namespace {

using test::Output;
using test::ServerProcess;

// One line says where the server listens, that TLS is off, and what it
// serves: the driver, its CUDA version and each GPU with its memory.
TEST(Cli, TheServerSaysWhatItServesInOneLine) {
  ServerProcess server;
  const std::string out = server.output();
  EXPECT_NE(out.find("scuda server listening on " + server.address() + " (TLS off); driver " +
                     DOUBLE_LIB + ", CUDA 13."),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("; 1 GPU: 0 "), std::string::npos) << out;
  EXPECT_NE(out.find(" (1.0 GiB)\n"), std::string::npos) << "the double's 1 GiB: " << out;
}

// A library that loads but is not a driver is refused as clearly as a
// missing one.
TEST(Cli, AServerWhoseDriverIsNotADriverDoesNotStart) {
  Output o = test::run_program({SCUDA_BIN, "server", "-l", "127.0.0.1:0", "--driver", "libm.so.6"});
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("no usable GPU driver, so nothing to serve: libm.so.6 is not a CUDA "
                       "driver"),
            std::string::npos)
      << o.err;
  EXPECT_EQ(o.out.find("listening"), std::string::npos) << o.out;
}

// An unknown level is refused before anything runs, naming the levels.
TEST(Cli, AnUnknownLogLevelIsAnErrorThatListsTheLevels) {
  Output o = test::run_program({SCUDA_BIN, "server", "-l", "127.0.0.1:0", "--driver", DOUBLE_LIB},
                               {"SCUDA_LOG_LEVEL=loud"});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("SCUDA_LOG_LEVEL=loud names no log level"), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("trace, debug, info, warn, error, critical and off"), std::string::npos)
      << o.err;
  EXPECT_EQ(o.out.find("listening"), std::string::npos) << o.out;
}

// The first line `command` prints, "" when it fails.
std::string first_line_of(const std::string& command) {
  FILE* p = popen(command.c_str(), "r");
  char line[256] = {};
  const bool read = p && std::fgets(line, sizeof line, p);
  const bool ok = p && pclose(p) == 0;
  std::string text = read && ok ? line : "";
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// The version names a commit of this repository (the build's HEAD, which
// may be behind the source's now), or is the project's version outside git.
TEST(Cli, VersionComesFromGitDescribe) {
  Output o = test::run_program({SCUDA_BIN, "--version"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(o.out, m, std::regex("^scuda (\\S+) "))) << o.out;
  const std::string version = m[1];
  const std::string git = "git -C '" SOURCE_DIR "' ";
  if (first_line_of(git + "rev-parse --git-dir 2>/dev/null").empty()) {
    EXPECT_EQ(version, PROJECT_VERSION);
    return;
  }
  ASSERT_TRUE(std::regex_search(version, m, std::regex("-g([0-9a-f]{7,})"))) << version;
  EXPECT_EQ(first_line_of(git + "rev-parse --verify --quiet '" + m[1].str() + "^{commit}'")
                .rfind(m[1].str(), 0),
            0u)
      << version << " names no commit of " << SOURCE_DIR;
}

// `scuda -l HOST:0` is `scuda server -l HOST:0`: it prints the port the
// system chose (and stops at SIGINT, which `timeout` sends).
TEST(Cli, ListenAloneStartsAServerAndPrintsItsPort) {
  Output o = test::run_program({"/usr/bin/timeout", "-s", "INT", "2", SCUDA_BIN, "-l",
                                "127.0.0.1:0", "--driver", DOUBLE_LIB});
  std::smatch port;
  ASSERT_TRUE(std::regex_search(o.out, port, std::regex("listening on 127\\.0\\.0\\.1:(\\d+) ")))
      << o.out << o.err;
  EXPECT_GT(std::stoi(port[1]), 0);
}

TEST(Cli, ListenAloneKeepsTheServersTlsRule) {
  Output o = test::run_program({SCUDA_BIN, "-l", "0.0.0.0:0", "--driver", DOUBLE_LIB});
  EXPECT_EQ(o.exit_code, 2);
  EXPECT_NE(o.err.find("refusing to listen on 0.0.0.0:0 without TLS"), std::string::npos) << o.err;
}

// A HOME of its own, so that ~/.config/scuda/host is the test's.
class Remember : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/scuda-home-XXXXXX";
    home_ = mkdtemp(dir);
  }
  void TearDown() override { std::filesystem::remove_all(home_); }
  Output remember(const std::string& address) {
    return test::run_program({SCUDA_BIN, address}, {"HOME=" + home_, "SCUDA_TOKEN_FILE="});
  }
  std::string host_file() const { return home_ + "/.config/scuda/host"; }
  std::string home_;
};

TEST_F(Remember, AServerThatAnswersBecomesThisMachinesServer) {
  ServerProcess server;
  Output o = remember(server.address());
  EXPECT_EQ(o.exit_code, 0) << o.err;
  std::string line;
  std::getline(std::ifstream(host_file()), line);
  EXPECT_EQ(line, server.address());
  EXPECT_NE(o.out.find("scuda server " + server.address() + " answers (1 GPU: scuda test double)"),
            std::string::npos)
      << o.out;
  EXPECT_NE(o.out.find("wrote it to " + host_file()), std::string::npos) << o.out;
}

TEST_F(Remember, NothingIsWrittenWhenNoServerAnswers) {
  const std::string address = "127.0.0.1:" + std::to_string(test::free_port());
  Output o = remember(address);
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find(address), std::string::npos) << o.err;
  EXPECT_FALSE(std::filesystem::exists(host_file()));
}

TEST_F(Remember, NothingIsWrittenWhenTheServerRefusesTheToken) {
  const std::string token = home_ + "/token";
  std::ofstream(token) << "secret\n";
  ServerProcess server({"--token-file", token});
  Output o = remember(server.address());
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_NE(o.err.find("refused this machine: authentication failed"), std::string::npos) << o.err;
  EXPECT_FALSE(std::filesystem::exists(host_file()));
}

}  // namespace
}  // namespace scuda
