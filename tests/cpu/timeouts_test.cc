// Timeouts and shutdown between a client and a real server (with the driver
// test double): a silent connection is closed, a frozen server fails the
// call that waits for it, a busy one does not, and SIGTERM lets running
// sessions finish.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "common/socket.h"
#include "server_process.h"

namespace scuda {
namespace {

using Clock = std::chrono::steady_clock;
using test::Output;
using test::ServerProcess;

Output client(const ServerProcess& s, std::vector<std::string> args,
              std::vector<std::string> env = {}) {
  env.push_back("SCUDA_SERVER=" + s.address());
  args.insert(args.begin(), CLIENT_TOOL);
  return test::run_program(args, env);
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Starts a client whose kernel keeps its session busy for `ms`, on a thread
// that fills *out when it ends, and returns once the session has begun.
std::thread busy_client(const ServerProcess& server, int ms, Output* out) {
  std::thread t([&server, ms, out] { *out = client(server, {"nap", std::to_string(ms)}); });
  for (int i = 0; i < 250 && test::children_of(server.pid()).empty(); ++i) usleep(20000);
  usleep(300000);  // the nap has begun
  return t;
}

// A connection that never sends its handshake holds a process only until
// the handshake timeout.
TEST(Timeouts, AConnectionWithoutAHandshakeIsClosed) {
  ServerProcess server({"--handshake-timeout", "0.3"});
  HostPort hp;
  std::string error;
  ASSERT_TRUE(parse_host_port(server.address(), &hp, &error)) << error;
  Socket silent = connect_tcp(hp, &error);
  ASSERT_TRUE(silent.valid()) << error;
  const timeval patience{10, 0};  // a failure below must not hang the test
  setsockopt(silent.fd(), SOL_SOCKET, SO_RCVTIMEO, &patience, sizeof patience);
  const auto start = Clock::now();
  char byte;
  EXPECT_EQ(read(silent.fd(), &byte, 1), 0);
  EXPECT_LT(seconds_since(start), 5.0);
  for (int i = 0; i < 250 && !test::all_ended(server.pid()); ++i) usleep(20000);
  EXPECT_TRUE(test::all_ended(server.pid()));
}

// A session busy for longer than the client's silence limit still answers:
// its heartbeats tell the waiting client it is alive.
TEST(Timeouts, ABusyServerIsNotTakenForAFrozenOne) {
  ServerProcess server;
  Output o = client(server, {"nap", "2500"}, {"SCUDA_SERVER_TIMEOUT=1"});
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_EQ(o.out, "cuCtxSynchronize: CUDA_SUCCESS\n") << o.err;
}

// Behind a slow link, a call that waits behind megabytes of one-way copies
// still hears the session, which is busy reading them.
TEST(Timeouts, ASessionReadingASlowUploadIsNotTakenForAFrozenOne) {
  ServerProcess server;
  Output o;
  {
    test::SlowLink link(LINK_BIN, server, {"--gbit", "0.04"});
    o = test::run_program({CLIENT_TOOL, "upload", "12"},
                          {"SCUDA_SERVER=" + link.address(), "SCUDA_SERVER_TIMEOUT=1",
                           "SCUDA_COMPRESS=off", "SCUDA_CONNECT_RETRY=5"});
  }
  EXPECT_EQ(o.out, "cuCtxSynchronize: CUDA_SUCCESS\n") << o.err;
}

// A session frozen (SIGSTOP) under a waiting call: the call fails within
// the client's limit, and says why.
TEST(Timeouts, AFrozenServerFailsTheWaitingCallWithinTheLimit) {
  ServerProcess server;
  test::InteractiveClient client(server, "launch-after-loss", {"SCUDA_SERVER_TIMEOUT=2"});
  ASSERT_EQ(client.line(), "ready\n");
  const std::vector<test::Child> sessions = test::children_of(server.pid());
  ASSERT_EQ(sessions.size(), 1u);
  kill(sessions[0].pid, SIGSTOP);
  const auto start = Clock::now();
  ASSERT_TRUE(client.go());
  const int status = client.wait();
  const double waited = seconds_since(start);
  kill(sessions[0].pid, SIGKILL);
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status);
  EXPECT_EQ(client.line(), "cuCtxSynchronize: CUDA_ERROR_DEVICE_UNAVAILABLE\n");
  EXPECT_GE(waited, 1.5);
  EXPECT_LT(waited, 8.0);
  EXPECT_NE(client.err().find("no word from the server for 2 s"), std::string::npos)
      << client.err();
}

// What a SIGTERM did to a server with --drain-timeout `drain_s` while a
// client's session was busy for `nap_ms`.
struct Drained {
  int status;      // the server's wait status
  double seconds;  // from the signal to the server's end
  Output client;
};

Drained sigterm_while_busy(int drain_s, int nap_ms) {
  ServerProcess server({"--drain-timeout", std::to_string(drain_s)});
  Drained d{};
  std::thread running = busy_client(server, nap_ms, &d.client);
  const auto start = Clock::now();
  d.status = server.wait_for_exit(SIGTERM);
  d.seconds = seconds_since(start);
  running.join();
  return d;
}

// SIGTERM: no new clients, but a running session finishes its work and the
// server then exits 0.
TEST(Timeouts, SigtermLetsRunningSessionsFinish) {
  const Drained d = sigterm_while_busy(20, 1500);
  EXPECT_TRUE(WIFEXITED(d.status) && WEXITSTATUS(d.status) == 0) << d.status;
  EXPECT_EQ(d.client.out, "cuCtxSynchronize: CUDA_SUCCESS\n") << d.client.err;
  EXPECT_LT(d.seconds, 10.0);
}

// A session still running at the drain's end is ended: its client gets an
// error, and the server exits 0 soon after the limit.
TEST(Timeouts, SessionsStillRunningAtTheDrainsEndAreEnded) {
  const Drained d = sigterm_while_busy(1, 8000);
  EXPECT_TRUE(WIFEXITED(d.status) && WEXITSTATUS(d.status) == 0) << d.status;
  EXPECT_LT(d.seconds, 5.0);
  EXPECT_EQ(d.client.out, "cuCtxSynchronize: CUDA_ERROR_DEVICE_UNAVAILABLE\n") << d.client.err;
}

// A session whose client went away is reaped at once, not at the next
// connection: no zombie stays behind.
TEST(Timeouts, AnEndedSessionIsReapedAtOnce) {
  ServerProcess server;
  ASSERT_EQ(client(server, {"init"}).exit_code, 0);
  for (int i = 0; i < 100 && !test::children_of(server.pid()).empty(); ++i) usleep(20000);
  EXPECT_TRUE(test::children_of(server.pid()).empty());
}

// A client that finds the server at its limit of sessions waits for a
// place, says so, and runs once the session before it has ended.
TEST(Timeouts, AClientWaitsForAServerAtItsLimit) {
  ServerProcess server({"--max-sessions", "1"});
  Output first;
  std::thread running = busy_client(server, 1500, &first);
  const auto start = Clock::now();
  Output second = client(server, {"init"}, {"SCUDA_WAIT_TIMEOUT=30"});
  const double waited = seconds_since(start);
  running.join();
  EXPECT_EQ(first.out, "cuCtxSynchronize: CUDA_SUCCESS\n") << first.err;
  EXPECT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.err.find("waiting for a GPU"), std::string::npos) << second.err;
  EXPECT_GE(waited, 0.5);
}

// The wait has a limit: past it, the client fails with the server's reason.
TEST(Timeouts, TheWaitForAPlaceHasALimit) {
  ServerProcess server({"--max-sessions", "1"});
  Output first;
  std::thread running = busy_client(server, 4000, &first);
  Output second = client(server, {"init"}, {"SCUDA_WAIT_TIMEOUT=1"});
  running.join();
  EXPECT_NE(second.exit_code, 0);
  EXPECT_NE(second.err.find("limit of 1 sessions"), std::string::npos) << second.err;
  EXPECT_NE(second.err.find("SCUDA_WAIT_TIMEOUT"), std::string::npos) << second.err;
}

// `scuda run --wait-timeout 0` does not wait for a place.
TEST(Timeouts, ScudaRunTakesTheWaitsLimit) {
  ServerProcess server({"--max-sessions", "1"});
  Output first;
  std::thread running = busy_client(server, 3000, &first);
  const auto start = Clock::now();
  Output o = test::run_program({SCUDA_BIN, "run", "--server", server.address(), "--wait-timeout",
                                "0", "--", CLIENT_TOOL, "init"});
  const double took = seconds_since(start);
  running.join();
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.err.find("limit of 1 sessions"), std::string::npos) << o.err;
  EXPECT_LT(took, 2.0);
}

// A client started before its server (a service and its GPU server started
// together) waits for it, within SCUDA_CONNECT_RETRY.
TEST(Timeouts, AClientStartedBeforeItsServerWaitsForIt) {
  const std::string address = "127.0.0.1:" + std::to_string(test::free_port());
  Output o;
  std::thread early([&] {
    o = test::run_program({CLIENT_TOOL, "init"},
                          {"SCUDA_SERVER=" + address, "SCUDA_CONNECT_RETRY=20"});
  });
  usleep(600000);
  pid_t server = fork();
  if (server == 0) {
    freopen("/dev/null", "w", stdout);
    execl(SCUDA_BIN, SCUDA_BIN, "server", "-l", address.c_str(), "--driver", DOUBLE_LIB,
          "--drain-timeout", "0", nullptr);
    _exit(127);
  }
  early.join();
  kill(server, SIGTERM);
  waitpid(server, nullptr, 0);
  EXPECT_EQ(o.exit_code, 0) << o.err;
  EXPECT_NE(o.err.find("trying again"), std::string::npos) << o.err;
}

// Nothing listens for longer than the window: the client gives up at its end.
TEST(Timeouts, ARefusedConnectIsRetriedOnlyWithinTheWindow) {
  const std::string address = "127.0.0.1:" + std::to_string(test::free_port());
  const auto start = Clock::now();
  Output o = test::run_program({CLIENT_TOOL, "init"},
                               {"SCUDA_SERVER=" + address, "SCUDA_CONNECT_RETRY=1"});
  const double took = seconds_since(start);
  EXPECT_NE(o.exit_code, 0);
  EXPECT_NE(o.err.find("cannot connect to " + address), std::string::npos) << o.err;
  EXPECT_GE(took, 0.5);
  EXPECT_LT(took, 4.0);
}

}  // namespace
}  // namespace scuda
