// A pool of servers given to one client: `scuda run --pick least-loaded`
// against real servers on the driver double, the client library's turn to
// the next server of a list, and the order the pick makes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "common/server_pick.h"
#include "server_process.h"

namespace scuda {
namespace {

using test::Output;
using test::ServerProcess;

std::string nobody_there() { return "127.0.0.1:" + std::to_string(test::free_port()); }

Output run_pool(const std::vector<std::string>& servers, const std::string& pick) {
  std::vector<std::string> argv = {SCUDA_BIN, "run", "--pick", pick};
  for (const std::string& s : servers) argv.insert(argv.end(), {"--server", s});
  argv.insert(argv.end(), {"--", CLIENT_TOOL, "init"});
  return test::run_program(argv,
                           {"SCUDA_TOKEN_FILE=", "SCUDA_CONNECT_RETRY=0", "SCUDA_LOG_LEVEL=info"});
}

// How many sessions the server at `address` has started, from its status.
uint64_t sessions_started(const std::string& address) {
  Output o = test::run_program({SCUDA_BIN, "status", "--json", "--server", address},
                               {"SCUDA_TOKEN_FILE="});
  const nlohmann::json j = nlohmann::json::parse(o.out, nullptr, false);
  return j.is_object() ? j["totals"]["sessions_started"].get<uint64_t>() : ~0ull;
}

// The first server of the list is busy: the program runs on the second,
// which `scuda run` chose once for all the program's processes.
TEST(ServerPool, LeastLoadedTakesTheIdleServer) {
  ServerProcess busy, idle;
  test::InteractiveClient holder(busy, "launch-after-loss");
  ASSERT_EQ(holder.line(), "ready\n") << holder.err();
  Output o = run_pool({busy.address(), idle.address()}, "least-loaded");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "cuInit: CUDA_SUCCESS\n") << o.err;
  EXPECT_NE(o.err.find("least loaded of 2 servers is " + idle.address()), std::string::npos)
      << o.err;
  EXPECT_EQ(sessions_started(idle.address()), 1u);
  EXPECT_EQ(sessions_started(busy.address()), 1u);  // the holder's only
  holder.go();
  EXPECT_EQ(holder.wait(), 0) << holder.err();
}

// "first" keeps the given order, busy or not.
TEST(ServerPool, FirstKeepsTheGivenOrder) {
  ServerProcess busy, idle;
  test::InteractiveClient holder(busy, "launch-after-loss");
  ASSERT_EQ(holder.line(), "ready\n") << holder.err();
  Output o = run_pool({busy.address(), idle.address()}, "first");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(sessions_started(busy.address()), 2u);
  EXPECT_EQ(sessions_started(idle.address()), 0u);
  holder.go();
  EXPECT_EQ(holder.wait(), 0) << holder.err();
}

// A server that does not answer is left out of the pick, and said so.
TEST(ServerPool, AServerThatDoesNotAnswerIsLeftOut) {
  ServerProcess server;
  const std::string gone = nobody_there();
  Output o = run_pool({gone, server.address()}, "least-loaded");
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("leaving a server out of the pick: nothing listens at " + gone),
            std::string::npos)
      << o.err;
  EXPECT_EQ(sessions_started(server.address()), 1u);
}

TEST(ServerPool, NoServerAnsweringFailsAndSaysSo) {
  Output o = run_pool({nobody_there(), nobody_there()}, "least-loaded");
  EXPECT_EQ(o.exit_code, 1);
  EXPECT_EQ(o.out, "");
  EXPECT_NE(o.err.find("none of the 2 servers answered"), std::string::npos) << o.err;
}

// Without `scuda run`, each process picks for itself: here the idle server.
TEST(ServerPool, TheLibraryPicksTheLeastLoadedItself) {
  ServerProcess busy, idle;
  test::InteractiveClient holder(busy, "launch-after-loss");
  ASSERT_EQ(holder.line(), "ready\n") << holder.err();
  Output o =
      test::run_program({CLIENT_TOOL, "init"},
                        {"SCUDA_SERVER=" + busy.address() + "," + idle.address(),
                         "SCUDA_PICK=least-loaded", "SCUDA_TOKEN_FILE=", "SCUDA_LOG_LEVEL=info"});
  EXPECT_EQ(o.out, "cuInit: CUDA_SUCCESS\n") << o.err;
  EXPECT_NE(o.err.find("least loaded of 2 servers is " + idle.address()), std::string::npos)
      << o.err;
  EXPECT_EQ(sessions_started(idle.address()), 1u);
  holder.go();
  EXPECT_EQ(holder.wait(), 0) << holder.err();
}

// Without `scuda run`, SCUDA_PICK=first takes the first server of the
// list that takes the client.
TEST(ServerPool, TheLibraryTurnsToTheNextServerOfAList) {
  ServerProcess server;
  const std::string gone = nobody_there();
  Output o = test::run_program(
      {CLIENT_TOOL, "init"}, {"SCUDA_SERVER=" + gone + ", " + server.address(), "SCUDA_PICK=first",
                              "SCUDA_CONNECT_RETRY=0", "SCUDA_TOKEN_FILE="});
  EXPECT_EQ(o.out, "cuInit: CUDA_SUCCESS\n") << o.err;
  EXPECT_NE(o.err.find("trying the next server of the list, " + server.address()),
            std::string::npos)
      << o.err;
}

TEST(ServerPool, TheLibrarysErrorNamesTheLastServerTried) {
  const std::string last = nobody_there();
  Output o = test::run_program({CLIENT_TOOL, "init"},
                               {"SCUDA_SERVER=" + nobody_there() + "," + last, "SCUDA_PICK=first",
                                "SCUDA_CONNECT_RETRY=0", "SCUDA_TOKEN_FILE="});
  EXPECT_EQ(o.out, "cuInit: CUDA_ERROR_NO_DEVICE\n") << o.err;
  EXPECT_NE(o.err.find(last), std::string::npos) << o.err;
}

// Without a pick, the GPUs of several servers are one list of devices
// (several_servers_e2e_test has the rest): every server has a session.
TEST(ServerPool, WithoutAPickEveryServerServes) {
  ServerProcess a, b;
  Output o = test::run_program({CLIENT_TOOL, "init"},
                               {"SCUDA_SERVER=" + a.address() + "," + b.address(),
                                "SCUDA_PICK=", "SCUDA_TOKEN_FILE=", "SCUDA_LOG_LEVEL=info"});
  EXPECT_EQ(o.out, "cuInit: CUDA_SUCCESS\n") << o.err;
  EXPECT_NE(o.err.find("2 servers, 2 devices in all"), std::string::npos) << o.err;
  EXPECT_EQ(sessions_started(a.address()), 1u);
  EXPECT_EQ(sessions_started(b.address()), 1u);
}

// One list with a hole would number the GPUs differently from run to run:
// a server of the list that does not answer fails the program, by name.
TEST(ServerPool, WithoutAPickEveryServerMustAnswer) {
  ServerProcess a;
  const std::string gone = nobody_there();
  Output o = test::run_program({CLIENT_TOOL, "init"},
                               {"SCUDA_SERVER=" + a.address() + "," + gone,
                                "SCUDA_PICK=", "SCUDA_CONNECT_RETRY=0", "SCUDA_TOKEN_FILE="});
  EXPECT_EQ(o.out, "cuInit: CUDA_ERROR_NO_DEVICE\n") << o.err;
  EXPECT_NE(o.err.find(gone), std::string::npos) << o.err;
  EXPECT_NE(o.err.find("SCUDA_PICK=first"), std::string::npos) << o.err;
}

TEST(ServerPool, AnUnknownPickIsRefused) {
  ServerProcess a, b;
  Output o =
      test::run_program({CLIENT_TOOL, "init"}, {"SCUDA_SERVER=" + a.address() + "," + b.address(),
                                                "SCUDA_PICK=random", "SCUDA_TOKEN_FILE="});
  EXPECT_EQ(o.out, "cuInit: CUDA_ERROR_NO_DEVICE\n") << o.err;
  EXPECT_NE(o.err.find("SCUDA_PICK is 'random'"), std::string::npos) << o.err;
}

// SCUDA_PICK=local-rank: each process of a job takes the server at its
// local rank, and only that one.
TEST(ServerPool, EachLocalRankTakesItsOwnServer) {
  ServerProcess a, b;
  const std::string list = "SCUDA_SERVER=" + a.address() + "," + b.address();
  Output o = test::run_program({CLIENT_TOOL, "init"},
                               {list, "SCUDA_PICK=local-rank", "LOCAL_RANK=1", "SLURM_LOCALID=0",
                                "SCUDA_TOKEN_FILE=", "SCUDA_LOG_LEVEL=info"});
  EXPECT_EQ(o.out, "cuInit: CUDA_SUCCESS\n") << o.err;
  EXPECT_NE(o.err.find("LOCAL_RANK=1: the process takes server 2 of 2, " + b.address()),
            std::string::npos)
      << o.err;
  EXPECT_EQ(sessions_started(a.address()), 0u);
  EXPECT_EQ(sessions_started(b.address()), 1u);
  o = test::run_program(
      {CLIENT_TOOL, "init"},
      {list, "SCUDA_PICK=local-rank", "LOCAL_RANK=", "SLURM_LOCALID=0", "SCUDA_TOKEN_FILE="});
  EXPECT_EQ(o.out, "cuInit: CUDA_SUCCESS\n") << o.err;
  EXPECT_EQ(sessions_started(a.address()), 1u);
}

// A rank beyond the list has no GPU of its own: refused, not doubled up.
TEST(ServerPool, ALocalRankBeyondTheListIsRefused) {
  ServerProcess a, b;
  Output o = test::run_program({CLIENT_TOOL, "init"},
                               {"SCUDA_SERVER=" + a.address() + "," + b.address(),
                                "SCUDA_PICK=local-rank", "LOCAL_RANK=2", "SCUDA_TOKEN_FILE="});
  EXPECT_EQ(o.out, "cuInit: CUDA_ERROR_NO_DEVICE\n") << o.err;
  EXPECT_NE(o.err.find("LOCAL_RANK=2 but SCUDA_SERVER names 2 servers"), std::string::npos)
      << o.err;
  EXPECT_EQ(sessions_started(a.address()) + sessions_started(b.address()), 0u);
}

// `scuda status` given a pool shows every server, keyed by address.
TEST(ServerPool, StatusShowsEveryServerOfAPool) {
  ServerProcess a, b;
  Output o = test::run_program(
      {SCUDA_BIN, "status", "--json", "--server", a.address() + "," + b.address()},
      {"SCUDA_TOKEN_FILE="});
  ASSERT_EQ(o.exit_code, 0) << o.err;
  const nlohmann::json j = nlohmann::json::parse(o.out, nullptr, false);
  ASSERT_TRUE(j.is_object()) << o.out;
  EXPECT_EQ(j.size(), 2u);
  EXPECT_TRUE(j.contains(a.address()) && j[a.address()].contains("gpus")) << o.out;
  EXPECT_TRUE(j.contains(b.address()) && j[b.address()].contains("gpus")) << o.out;
}

ServerLoad load(const char* address, uint64_t busy, uint64_t gpus, uint64_t free_gib) {
  ServerLoad l;
  l.address = address;
  l.busy = busy;
  l.gpus = gpus;
  l.free_bytes = free_gib << 30;
  return l;
}

// Fewest busy sessions per GPU first, then the most free memory; a server
// that did not answer is dropped.
TEST(ServerPool, LeastLoadedOrdersBySessionsPerGpuThenFreeMemory) {
  ServerLoad gone = load("gone", 0, 8, 640);
  gone.error = "nothing listens";
  const auto order =
      least_loaded_first({load("two-on-two", 2, 2, 1), load("one-on-one", 1, 1, 5), gone,
                          load("idle", 0, 1, 0), load("three-on-two", 3, 2, 80)});
  std::vector<std::string> names;
  for (const ServerLoad& l : order) names.push_back(l.address);
  EXPECT_EQ(names, (std::vector<std::string>{"idle", "one-on-one", "two-on-two", "three-on-two"}));
}

TEST(ServerPool, PickNames) {
  Pick p;
  EXPECT_TRUE(parse_pick("least-loaded", &p));
  EXPECT_EQ(p, Pick::kLeastLoaded);
  EXPECT_TRUE(parse_pick("first", &p));
  EXPECT_EQ(p, Pick::kFirst);
  EXPECT_TRUE(parse_pick("local-rank", &p));
  EXPECT_EQ(p, Pick::kLocalRank);
  EXPECT_FALSE(parse_pick("random", &p));
}

// What `scuda run` tells NCCL, printed by the program it runs.
Output nccl_env(const std::vector<std::string>& options, const std::vector<std::string>& env) {
  std::vector<std::string> argv = {SCUDA_BIN, "run"};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.insert(argv.end(), {"--server", nobody_there(), "--server", nobody_there(), "--",
                           CLIENT_TOOL, "env", "NCCL_SHM_DISABLE", "NCCL_IGNORE_DISABLED_P2P"});
  std::vector<std::string> all = {"SCUDA_TOKEN_FILE=", "SCUDA_PICK="};
  all.insert(all.end(), env.begin(), env.end());
  return test::run_program(argv, all);
}

// One list of several servers: NCCL takes its socket transport between
// GPUs of two servers (live mirrors), where it would stop at the NVLink
// CUDA does not call a peer link.
TEST(ServerPool, OneListOfServersSendsNcclOverItsSocketTransport) {
  Output o = nccl_env({}, {});
  EXPECT_EQ(o.out, "1 1\n") << o.err;
  EXPECT_NE(o.err.find("for NCCL between GPUs of two servers, NCCL_IGNORE_DISABLED_P2P=1 "
                       "NCCL_SHM_DISABLE=1"),
            std::string::npos)
      << o.err;
}

TEST(ServerPool, TheProgramsOwnNcclSettingsStand) {
  Output o = nccl_env({}, {"NCCL_SHM_DISABLE=0"});
  EXPECT_EQ(o.out, "0 1\n") << o.err;
}

// A pick gives each process one server: NCCL is left to its own choices.
TEST(ServerPool, APickLeavesNcclAlone) {
  Output o = nccl_env({"--pick", "local-rank"}, {});
  EXPECT_EQ(o.out, "unset unset\n") << o.err;
}

}  // namespace
}  // namespace scuda
