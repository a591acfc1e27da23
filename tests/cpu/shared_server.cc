#include "shared_server.h"

#include <gtest/gtest.h>

#include <cstdlib>

namespace scuda::test {

namespace {

ServerProcess* g_server = nullptr;

class ServerEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    g_server = new ServerProcess();
    setenv("SCUDA_SERVER", g_server->address().c_str(), 1);
  }
  void TearDown() override { delete g_server; }
};

const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new ServerEnvironment);

}  // namespace

ServerProcess& shared_server() { return *g_server; }

}  // namespace scuda::test
