// Named tokens and the admission queue against a real server (with the
// driver test double) and real clients: names in status, refusals before
// any wait, hashed secrets, per-token session limits, the queue's order by
// priority then arrival, the device memory cap, SIGHUP reloads and the
// wait's limit.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "http_get.h"
#include "server/listener/tokens.h"
#include "server_process.h"

namespace scuda {
namespace {

using Clock = std::chrono::steady_clock;
using test::InteractiveClient;
using test::Output;
using test::ServerProcess;

// A directory of secret files and a tokens file, removed at the end.
class TokenDir {
 public:
  TokenDir() {
    char dir[] = "/tmp/scuda-admission-XXXXXX";
    dir_ = mkdtemp(dir);
  }
  ~TokenDir() { std::filesystem::remove_all(dir_); }

  // A client's token file holding `secret`.
  std::string secret(const std::string& name, const std::string& secret) const {
    const std::string path = dir_ + "/" + name + ".secret";
    std::ofstream(path) << secret << "\n";
    return path;
  }
  // The server's tokens file, now holding `toml`.
  std::string tokens(const std::string& toml) const {
    const std::string path = dir_ + "/tokens.toml";
    std::ofstream(path, std::ios::trunc) << toml;
    return path;
  }

 private:
  std::string dir_;
};

// Tokens named a, b, c...: "[tokens.NAME]\nsecret = \"NAME-secret\"\n" and `more`.
std::string token_entry(const std::string& name, const std::string& more = "") {
  return "[tokens." + name + "]\nsecret = \"" + name + "-secret\"\n" + more + "\n";
}

std::vector<std::string> env_for(const TokenDir& dir, const std::string& name,
                                 std::vector<std::string> more = {}) {
  more.push_back("SCUDA_TOKEN_FILE=" + dir.secret(name, name + "-secret"));
  return more;
}

Output run_client(const ServerProcess& s, const TokenDir& dir, const std::string& token,
                  std::vector<std::string> args, std::vector<std::string> env = {}) {
  env = env_for(dir, token, env);
  env.push_back("SCUDA_SERVER=" + s.address());
  args.insert(args.begin(), CLIENT_TOOL);
  return test::run_program(args, env);
}

nlohmann::json status(const ServerProcess& s, const TokenDir& dir, const std::string& token) {
  Output o = test::run_program({SCUDA_BIN, "status", "--server", s.address(), "--json"},
                               env_for(dir, token));
  return o.exit_code == 0 ? nlohmann::json::parse(o.out) : nlohmann::json();
}

bool eventually(const std::function<bool()>& done, double seconds = 10) {
  const auto end = Clock::now() + std::chrono::duration<double>(seconds);
  while (!done()) {
    if (Clock::now() > end) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

// The queue as status shows it, once every waiting client has its place.
nlohmann::json placed_queue(const ServerProcess& s, const TokenDir& dir, const std::string& token,
                            size_t length) {
  nlohmann::json queue;
  eventually([&] {
    queue = status(s, dir, token)["queue"];
    if (!queue.is_array() || queue.size() != length) return false;
    for (const auto& q : queue)
      if (q["position"].get<int>() == 0) return false;
    return true;
  });
  return queue;
}

// The places a client printed ("waiting for a GPU: 3rd in line"), in order.
std::vector<int> printed_places(const std::string& err) {
  std::vector<int> places;
  const std::regex place("waiting for a GPU: ([0-9]+)(st|nd|rd|th) in line");
  for (auto it = std::sregex_iterator(err.begin(), err.end(), place); it != std::sregex_iterator();
       ++it)
    places.push_back(std::stoi((*it)[1]));
  return places;
}

// The tokens of the sessions the listener admitted from the queue, in order.
std::vector<std::string> admitted_tokens(const std::string& log) {
  std::vector<std::string> tokens;
  const std::regex admitted("session [0-9]+ \\(token '([a-z]*)', priority -?[0-9]+\\) admitted");
  for (auto it = std::sregex_iterator(log.begin(), log.end(), admitted);
       it != std::sregex_iterator(); ++it)
    tokens.push_back((*it)[1]);
  return tokens;
}

// A client that holds a session until go(): "ready" once it has one.
std::unique_ptr<InteractiveClient> holder(const ServerProcess& s, const TokenDir& dir,
                                          const std::string& token) {
  auto c = std::make_unique<InteractiveClient>(s, "launch-after-loss", env_for(dir, token));
  EXPECT_EQ(c->line(), "ready\n") << c->err();
  return c;
}

// A client that waits for a place, then runs cuInit and ends.
std::unique_ptr<InteractiveClient> waiter(const ServerProcess& s, const TokenDir& dir,
                                          const std::string& token) {
  return std::make_unique<InteractiveClient>(s, "init",
                                             env_for(dir, token, {"SCUDA_WAIT_TIMEOUT=60"}));
}

TEST(Tokens, ReadsSizesAndHashedSecrets) {
  uint64_t bytes = 0;
  EXPECT_TRUE(server::parse_size("8GiB", &bytes));
  EXPECT_EQ(bytes, uint64_t{8} << 30);
  EXPECT_TRUE(server::parse_size("512 MiB", &bytes));
  EXPECT_EQ(bytes, uint64_t{512} << 20);
  EXPECT_TRUE(server::parse_size("4096", &bytes));
  EXPECT_EQ(bytes, 4096u);
  EXPECT_FALSE(server::parse_size("lots", &bytes));
  EXPECT_FALSE(server::parse_size("3 parsecs", &bytes));
  TokenDir dir;
  server::Tokens tokens;
  std::string error;
  ASSERT_TRUE(server::Tokens::load(
      dir.tokens(token_entry("a", "memory = \"1 GiB\"\npriority = 3") +
                 "[tokens.h]\nsha256 = "
                 "\"4e598f5daafc2fda61641ddbb5956deb23fde6616366dc9dd5a7c9f47da4d787\"\n"),
      &tokens, &error))
      << error;
  ASSERT_NE(tokens.match("a-secret"), nullptr);
  EXPECT_EQ(tokens.match("a-secret")->memory, uint64_t{1} << 30);
  EXPECT_EQ(tokens.match("a-secret")->priority, 3);
  ASSERT_NE(tokens.match("hashed-secret"), nullptr);
  EXPECT_EQ(tokens.match("hashed-secret")->name, "h");
  EXPECT_EQ(tokens.match("a-secre"), nullptr);
  EXPECT_FALSE(server::Tokens::load(dir.tokens("[tokens.x]\nsecret = \"s\"\ncolour = 3\n"), &tokens,
                                    &error));
  EXPECT_NE(error.find("unknown key 'colour'"), std::string::npos) << error;
  EXPECT_FALSE(server::Tokens::load(dir.tokens("[tokens.x\n"), &tokens, &error));
  EXPECT_NE(error.find("line 1"), std::string::npos) << error;
}

TEST(Admission, TwoTokensAreNamedInStatus) {
  TokenDir dir;
  ServerProcess server({"-v", "--tokens", dir.tokens(token_entry("alice") + token_entry("bob")),
                        "--metrics", "127.0.0.1:0"});
  auto a = holder(server, dir, "alice");
  auto b = holder(server, dir, "bob");
  const nlohmann::json j = status(server, dir, "alice");
  ASSERT_EQ(j["sessions"].size(), 2u) << j.dump();
  std::vector<std::string> names;
  for (const auto& s : j["sessions"]) names.push_back(s["token"].get<std::string>());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"alice", "bob"}));
  Output text =
      test::run_program({SCUDA_BIN, "status", "--server", server.address()}, env_for(dir, "bob"));
  EXPECT_NE(text.out.find("alice"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("Queue: empty"), std::string::npos) << text.out;
  const std::string metrics = test::http_get(test::metrics_address(server), "/metrics");
  EXPECT_EQ(test::metric_value(metrics, "scuda_token_sessions{token=\"alice\"}"), 1) << metrics;
  EXPECT_EQ(test::metric_value(metrics, "scuda_queue_length"), 0) << metrics;
  EXPECT_NE(server.log().find("(token 'bob') ready"), std::string::npos) << server.log();
  a->go();
  b->go();
  EXPECT_EQ(a->wait(), 0) << a->err();
  EXPECT_EQ(b->wait(), 0) << b->err();
}

// A wrong token is refused before the queue: at once, even at the limit.
TEST(Admission, AWrongTokenIsRefusedAtOnce) {
  TokenDir dir;
  ServerProcess server({"--tokens", dir.tokens(token_entry("alice")), "--max-sessions", "1"});
  auto a = holder(server, dir, "alice");
  const auto start = Clock::now();
  Output o = test::run_program({CLIENT_TOOL, "init"},
                               {"SCUDA_SERVER=" + server.address(), "SCUDA_WAIT_TIMEOUT=30",
                                "SCUDA_TOKEN_FILE=" + dir.secret("mallory", "guess")});
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 3.0);
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.err.find("authentication failed"), std::string::npos) << o.err;
  EXPECT_EQ(o.err.find("waiting for a GPU"), std::string::npos) << o.err;
  a->go();
  EXPECT_EQ(a->wait(), 0);
}

TEST(Admission, AHashedSecretIsAccepted) {
  TokenDir dir;
  ServerProcess server({"-v", "--tokens",
                        dir.tokens("[tokens.hashed]\nsha256 = "
                                   "\"4e598f5daafc2fda61641ddbb5956deb23fde6616366dc9dd5"
                                   "a7c9f47da4d787\"\n")});
  Output o = test::run_program(
      {CLIENT_TOOL, "init"},
      {"SCUDA_SERVER=" + server.address(), "SCUDA_TOKEN_FILE=" + dir.secret("h", "hashed-secret")});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(server.log().find("(token 'hashed') ready"), std::string::npos) << server.log();
}

// alice may run one session: her second client waits, while bob's gets in.
TEST(Admission, ATokenAtItsLimitQueuesItsNextClientWhileAnotherTokenGetsIn) {
  TokenDir dir;
  ServerProcess server(
      {"--tokens", dir.tokens(token_entry("alice", "max_sessions = 1") + token_entry("bob"))});
  auto first = holder(server, dir, "alice");
  auto second = waiter(server, dir, "alice");
  const nlohmann::json queue = placed_queue(server, dir, "bob", 1);
  ASSERT_EQ(queue.size(), 1u);
  EXPECT_EQ(queue[0]["token"], "alice");
  EXPECT_EQ(queue[0]["position"], 1);
  EXPECT_EQ(queue[0]["peer"].get<std::string>().rfind("127.0.0.1:", 0), 0u) << queue.dump();
  Output bob = run_client(server, dir, "bob", {"init"});
  EXPECT_EQ(bob.exit_code, 0) << bob.err;
  EXPECT_EQ(bob.err.find("waiting for a GPU"), std::string::npos) << bob.err;
  EXPECT_EQ(status(server, dir, "bob")["queue"].size(), 1u);  // alice still waits
  first->go();
  EXPECT_EQ(first->wait(), 0) << first->err();
  EXPECT_EQ(second->line(), "cuInit: CUDA_SUCCESS\n") << second->err();
  EXPECT_EQ(second->wait(), 0);
  EXPECT_NE(second->err().find("waiting for a GPU: 1st in line (token 'alice' is at its limit of "
                               "1 sessions)"),
            std::string::npos)
      << second->err();
}

// Three clients wait behind a full server: the highest priority gets in
// first, whatever the order they came in; each was told its place.
TEST(Admission, TheQueueGoesByPriorityThenArrival) {
  TokenDir dir;
  ServerProcess server(
      {"-v", "--max-sessions", "1", "--metrics", "127.0.0.1:0", "--tokens",
       dir.tokens(token_entry("holder") + token_entry("low", "priority = 1") +
                  token_entry("mid", "priority = 5") + token_entry("high", "priority = 9"))});
  auto running = holder(server, dir, "holder");
  std::vector<std::unique_ptr<InteractiveClient>> waiting;
  for (const char* token : {"low", "mid", "high"}) {
    waiting.push_back(waiter(server, dir, token));
    placed_queue(server, dir, "holder", waiting.size());
    // Each one told of its new place before the next comes.
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
  }
  const nlohmann::json queue = placed_queue(server, dir, "holder", 3);
  ASSERT_EQ(queue.size(), 3u);
  EXPECT_EQ(queue[0]["token"], "high");
  EXPECT_EQ(queue[1]["token"], "mid");
  EXPECT_EQ(queue[2]["token"], "low");
  EXPECT_EQ(queue[2]["position"], 3);
  EXPECT_EQ(test::metric_value(test::http_get(test::metrics_address(server), "/metrics"),
                               "scuda_queue_length"),
            3);
  running->go();
  EXPECT_EQ(running->wait(), 0);
  for (auto& c : waiting) EXPECT_EQ(c->wait(), 0) << c->err();
  // The listener logs an admission when it next looks at the queue, which
  // may be after the admitted client has already finished.
  std::vector<std::string> admitted = admitted_tokens(server.log());
  for (int i = 0; i < 200 && admitted.size() < 3; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
    admitted = admitted_tokens(server.log());
  }
  EXPECT_EQ(admitted, (std::vector<std::string>{"high", "mid", "low"})) << server.log();
  const std::vector<int> low = printed_places(waiting[0]->err());
  const std::vector<int> mid = printed_places(waiting[1]->err());
  const std::vector<int> high = printed_places(waiting[2]->err());
  ASSERT_GE(low.size(), 3u) << waiting[0]->err();
  EXPECT_EQ(std::vector<int>(low.begin(), low.begin() + 3), (std::vector<int>{1, 2, 3}));
  ASSERT_GE(mid.size(), 2u) << waiting[1]->err();
  EXPECT_EQ(std::vector<int>(mid.begin(), mid.begin() + 2), (std::vector<int>{1, 2}));
  EXPECT_EQ(high, std::vector<int>{1}) << waiting[2]->err();
}

// An allocation past the token's cap fails with CUDA_ERROR_OUT_OF_MEMORY,
// and the log names the token; memory freed is room again. Both paths:
// client-placed allocations (VMM) and the driver's cuMemAlloc.
class MemoryCap : public ::testing::TestWithParam<const char*> {};

TEST_P(MemoryCap, AnAllocationPastTheCapFails) {
  TokenDir dir;
  ServerProcess server({"--tokens", dir.tokens(token_entry("capped", "memory = \"64 MiB\""))});
  Output o = run_client(server, dir, "capped", {"quota", "32", "48"}, {GetParam()});
  EXPECT_EQ(o.out,
            "cuMemAlloc 32 MiB: 0\ncuMemAlloc 48 MiB: 2\nafter a free, cuMemAlloc 48 MiB: 0\n"
            "cuCtxSynchronize: CUDA_SUCCESS\n")
      << o.err;
  EXPECT_NE(server.log().find("token 'capped' is at its device memory cap of 67108864 bytes"),
            std::string::npos)
      << server.log();
}

INSTANTIATE_TEST_SUITE_P(Admission, MemoryCap, ::testing::Values("SCUDA_VMM=1", "SCUDA_VMM=0"),
                         [](const auto& info) {
                           return std::string(info.param[10] == '1' ? "ClientPlaced" : "Driver");
                         });

// Arrays hold device memory too, and so do a graph's allocation nodes for
// as long as its exec lives: they count against the cap.
struct HeldMemory {
  const char* name;
  const char* command;  // client_tool's, run with "32 48" against a 64 MiB cap
  const char* out;
};

class MemoryCapCounts : public ::testing::TestWithParam<HeldMemory> {};

TEST_P(MemoryCapCounts, AgainstTheCap) {
  TokenDir dir;
  ServerProcess server({"--tokens", dir.tokens(token_entry("capped", "memory = \"64 MiB\""))});
  Output o = run_client(server, dir, "capped", {GetParam().command, "32", "48"});
  EXPECT_EQ(o.out, GetParam().out) << o.err;
  EXPECT_NE(server.log().find("token 'capped' is at its device memory cap"), std::string::npos)
      << server.log();
}

INSTANTIATE_TEST_SUITE_P(
    Admission, MemoryCapCounts,
    ::testing::Values(
        HeldMemory{"Arrays", "array-quota",
                   "cuArrayCreate 32 MiB: 0\ncuArrayCreate 48 MiB: 2\nafter a destroy, "
                   "cuArrayCreate 48 MiB: 0\ncuCtxSynchronize: CUDA_SUCCESS\n"},
        HeldMemory{"GraphAllocationNodes", "graph-quota",
                   "graph of 32 MiB: 0\ncuMemAlloc 48 MiB: 2\nafter cuGraphExecDestroy, "
                   "cuMemAlloc 48 MiB: 0\ngraph of 80 MiB: 2\ncuCtxSynchronize: CUDA_SUCCESS\n"},
        // Charged once, at the instantiation, not also at the capture.
        HeldMemory{"CapturedStreamAllocations", "capture-quota",
                   "graph of 32 MiB: 0\ncuMemAlloc 48 MiB: 2\nafter cuGraphExecDestroy, "
                   "cuMemAlloc 48 MiB: 0\ngraph of 80 MiB: 2\ncuCtxSynchronize: CUDA_SUCCESS\n"}),
    [](const auto& info) { return std::string(info.param.name); });

// SIGHUP: a token added to the file works at once, a running session goes
// on, and a file that does not read leaves the tokens as they were.
TEST(Admission, SighupReloadsTheTokensFile) {
  TokenDir dir;
  ServerProcess server({"-v", "--tokens", dir.tokens(token_entry("alice"))});
  auto a = holder(server, dir, "alice");
  EXPECT_NE(run_client(server, dir, "carol", {"init"}).exit_code, 0);
  dir.tokens(token_entry("alice") + token_entry("carol"));
  kill(server.pid(), SIGHUP);
  ASSERT_TRUE(eventually([&] {
    return server.log().find("SIGHUP: read 2 tokens") != std::string::npos;
  })) << server.log();
  Output carol = run_client(server, dir, "carol", {"init"});
  EXPECT_EQ(carol.exit_code, 0) << carol.err;
  dir.tokens("[tokens.carol\n");
  kill(server.pid(), SIGHUP);
  ASSERT_TRUE(eventually([&] {
    return server.log().find("SIGHUP: kept the tokens as they were") != std::string::npos;
  })) << server.log();
  EXPECT_EQ(run_client(server, dir, "carol", {"init"}).exit_code, 0);
  a->go();
  EXPECT_EQ(a->line(), "cuCtxSynchronize: CUDA_SUCCESS\n") << a->err();
  EXPECT_EQ(a->wait(), 0);
}

// A client waiting with a token that a reload takes out of the file is sent
// away with the reason, instead of taking a place no token grants; the
// session that token runs goes on.
TEST(Admission, AQueuedClientWhoseTokenIsRemovedIsSentAway) {
  TokenDir dir;
  ServerProcess server({"-v", "--tokens",
                        dir.tokens(token_entry("alice", "max_sessions = 1") + token_entry("bob"))});
  auto first = holder(server, dir, "alice");
  auto second = waiter(server, dir, "alice");
  ASSERT_EQ(placed_queue(server, dir, "bob", 1).size(), 1u);
  dir.tokens(token_entry("bob"));
  kill(server.pid(), SIGHUP);
  EXPECT_NE(second->wait(), 0);
  EXPECT_NE(second->err().find("token 'alice' was taken out of the server's tokens file while "
                               "this client waited for a place"),
            std::string::npos)
      << second->err();
  EXPECT_TRUE(status(server, dir, "bob")["queue"].empty());
  first->go();
  EXPECT_EQ(first->line(), "cuCtxSynchronize: CUDA_SUCCESS\n") << first->err();
  EXPECT_EQ(first->wait(), 0);
}

// Past SCUDA_WAIT_TIMEOUT the client gives up with its place and the
// reason, and leaves the queue.
TEST(Admission, TheWaitEndsAtItsLimitWithAClearMessage) {
  TokenDir dir;
  ServerProcess server({"--tokens", dir.tokens(token_entry("alice")), "--max-sessions", "1"});
  auto a = holder(server, dir, "alice");
  const auto start = Clock::now();
  Output o = run_client(server, dir, "alice", {"init"}, {"SCUDA_WAIT_TIMEOUT=1"});
  const double took = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_NE(o.exit_code, 0);
  EXPECT_GE(took, 0.9);
  EXPECT_LT(took, 5.0);
  EXPECT_NE(o.err.find("did not take the client: it was 1st in line (the server is at its limit "
                       "of 1 sessions) and waited 1 s (SCUDA_WAIT_TIMEOUT sets how long)"),
            std::string::npos)
      << o.err;
  EXPECT_TRUE(eventually([&] { return status(server, dir, "alice")["queue"].empty(); }));
  a->go();
  EXPECT_EQ(a->wait(), 0);
}

}  // namespace
}  // namespace scuda
