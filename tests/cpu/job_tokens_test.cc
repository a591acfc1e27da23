// Per-job tokens (common/job_tokens.h): minted with a key, checked in
// constant time, refused once expired; and against a real server with the
// driver test double, a job's token works until `scuda token drop` ends its
// sessions and refuses it, while other jobs' tokens and the server's own
// token go on working.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "common/job_tokens.h"
#include "server/listener/job_revocations.h"
#include "server/status/session_table.h"
#include "server_process.h"

namespace scuda {
namespace {

using test::InteractiveClient;
using test::Output;
using test::ServerProcess;

const std::string kKey = "0123456789abcdef0123456789abcdef";
constexpr int64_t kNow = 1'800'000'000;

bool verifies(const std::string& key, const std::string& text, std::string* why = nullptr) {
  JobToken token;
  std::string ignored;
  return verify_job_token(key, text, kNow, &token, why ? why : &ignored);
}

TEST(JobTokens, AMintedTokenVerifiesAsItsJobUntilItExpires) {
  const std::string text = mint_job_token(kKey, "4711_2", kNow + 60);
  ASSERT_TRUE(looks_like_job_token(text)) << text;
  JobToken token;
  std::string why;
  ASSERT_TRUE(verify_job_token(kKey, text, kNow, &token, &why)) << why;
  EXPECT_EQ(token.job, "4711_2");
  EXPECT_EQ(token.expires, kNow + 60);
  EXPECT_FALSE(verify_job_token(kKey, text, kNow + 60, &token, &why));
  EXPECT_NE(why.find("expired"), std::string::npos) << why;
}

TEST(JobTokens, AnythingButWhatTheKeyMintedIsRefused) {
  const std::string text = mint_job_token(kKey, "42", kNow + 60);
  std::string why;
  EXPECT_FALSE(verifies(kKey + "x", text, &why));
  EXPECT_NE(why.find("not minted with this server's job key"), std::string::npos) << why;
  EXPECT_FALSE(verifies("", text));
  std::string other_job = text;
  other_job.replace(4, 2, "43");
  EXPECT_FALSE(verifies(kKey, other_job)) << "another job's id under this job's MAC";
  std::string later = text;
  later.replace(later.find('.', 4) + 1, 10, std::to_string(kNow + 99999));
  EXPECT_FALSE(verifies(kKey, later)) << "a later expiry under the same MAC";
  for (const std::string& bad :
       {std::string("job."), std::string("job.42"), text.substr(0, text.size() - 1), text + "0",
        "job..1800000060." + text.substr(text.rfind('.') + 1),
        "job.42.soon." + text.substr(text.rfind('.') + 1), std::string("secret")})
    EXPECT_FALSE(verifies(kKey, bad)) << bad;
  EXPECT_EQ(mint_job_token(kKey, "a/b", kNow), "") << "a job id with a slash";
  EXPECT_EQ(mint_job_token(kKey, "", kNow), "");
  EXPECT_EQ(mint_job_token("", "42", kNow), "");
}

// A drop refuses the job's tokens that expire no later than the dropped one:
// a job requeued under its id gets a later token, which goes on working.
TEST(RevokedJobs, ADropRefusesTheJobsTokensUpToItsExpiryOnly) {
  auto list = std::make_unique<server::RevokedJobs>();
  ASSERT_TRUE(list->revoke("7", kNow + 60, kNow));
  EXPECT_TRUE(list->revoked("7", kNow + 60));
  EXPECT_TRUE(list->revoked("7", kNow + 30));
  EXPECT_FALSE(list->revoked("7", kNow + 61)) << "the requeued job's later token";
  EXPECT_FALSE(list->revoked("70", kNow + 60));
  ASSERT_TRUE(list->revoke("7", kNow + 90, kNow));
  EXPECT_TRUE(list->revoked("7", kNow + 61)) << "its later token dropped too";
}

// A full list still takes a drop: the entry whose token expires first gives
// way, and an expired one is free again.
TEST(RevokedJobs, AFullListGivesUpTheEntryThatExpiresFirst) {
  auto list = std::make_unique<server::RevokedJobs>();
  for (size_t i = 0; i < server::kRevokedJobs; ++i)
    ASSERT_TRUE(list->revoke("j" + std::to_string(i), kNow + 1000 + static_cast<int64_t>(i), kNow));
  ASSERT_TRUE(list->revoke("late", kNow + 5000, kNow));
  EXPECT_TRUE(list->revoked("late", kNow + 5000));
  EXPECT_FALSE(list->revoked("j0", kNow + 1000)) << "the soonest to expire gave way";
  EXPECT_TRUE(list->revoked("j1", kNow + 1001));
  ASSERT_TRUE(list->revoke("after", kNow + 9000, kNow + 1500));
  EXPECT_TRUE(list->revoked("after", kNow + 9000));
  EXPECT_TRUE(list->revoked("late", kNow + 5000)) << "an expired entry was taken, not a live one";
}

// A folder with the job key, the server's own token and the jobs' tokens.
class JobTokenFiles {
 public:
  JobTokenFiles() {
    char dir[] = "/tmp/scuda-job-tokens-XXXXXX";
    dir_ = mkdtemp(dir);
    write("job.key", kKey);
    write("server.token", "the-servers-own-secret");
  }
  ~JobTokenFiles() { std::filesystem::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path(name)) << text << "\n";
    return path(name);
  }
  // The token `scuda token mint` prints for `job`, in a file of its own.
  std::string mint(const std::string& job, const std::string& key_file) const {
    Output o = test::run_program({SCUDA_BIN, "token", "mint", "--key", key_file, "--job", job});
    EXPECT_EQ(o.exit_code, 0) << o.err;
    std::string token = o.out.substr(0, o.out.find('\n'));
    return write("job-" + job + ".token", token);
  }

 private:
  std::string dir_;
};

Output init_with(const ServerProcess& s, const std::string& token_file) {
  return test::run_program({CLIENT_TOOL, "init"},
                           {"SCUDA_SERVER=" + s.address(), "SCUDA_TOKEN_FILE=" + token_file});
}

Output drop(const ServerProcess& s, const std::string& token_file) {
  return test::run_program(
      {SCUDA_BIN, "token", "drop", "--server", s.address(), "--token-file", token_file});
}

TEST(JobTokens, AJobsTokenWorksUntilItsEpilogDropsIt) {
  JobTokenFiles files;
  ServerProcess server(
      {"--job-key", files.path("job.key"), "--token-file", files.path("server.token")});
  const std::string job7 = files.mint("7", files.path("job.key"));
  const std::string job8 = files.mint("8", files.path("job.key"));
  Output first = init_with(server, job7);
  ASSERT_EQ(first.exit_code, 0) << first.err;

  InteractiveClient running(server, "launch-after-loss", {"SCUDA_TOKEN_FILE=" + job7});
  ASSERT_EQ(running.line(), "ready\n") << running.err();
  InteractiveClient other_job(server, "launch-after-loss", {"SCUDA_TOKEN_FILE=" + job8});
  ASSERT_EQ(other_job.line(), "ready\n") << other_job.err();

  Output dropped = drop(server, job7);
  ASSERT_EQ(dropped.exit_code, 0) << dropped.err;
  EXPECT_NE(dropped.out.find("job 7's token dropped; 1 sessions ended"), std::string::npos)
      << dropped.out;
  running.go();
  const int status = running.wait();
  EXPECT_FALSE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "job 7's session went on";

  Output refused = init_with(server, job7);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("job 7's token was dropped"), std::string::npos) << refused.err;
  Output again = drop(server, job7);  // an epilog run twice
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("job 7's token was already dropped; 0 sessions ended"),
            std::string::npos)
      << again.out;

  other_job.go();
  const int other_status = other_job.wait();
  EXPECT_TRUE(WIFEXITED(other_status) && WEXITSTATUS(other_status) == 0) << other_job.err();
  EXPECT_EQ(init_with(server, job8).exit_code, 0);
  EXPECT_EQ(init_with(server, files.path("server.token")).exit_code, 0) << "the server's own";

  files.write("other.key", kKey + "-another");
  Output foreign = init_with(server, files.mint("9", files.path("other.key")));
  EXPECT_NE(foreign.err.find("not minted with this server's job key"), std::string::npos)
      << foreign.err;
  Output not_a_job = drop(server, files.path("server.token"));
  EXPECT_EQ(not_a_job.exit_code, 2);
  EXPECT_NE(not_a_job.err.find("holds no job's token"), std::string::npos) << not_a_job.err;
}

// A session process of the listener (`parent`) whose slot names `pid` and
// job 7's token; the drop's sweep runs in a sibling.
int ended_by_sibling(server::SessionTable* table, pid_t pid) {
  server::SessionSlot* slot = table->take("peer");
  slot->pid.store(pid);
  std::snprintf(slot->token, sizeof slot->token, "job:7");
  slot->state.store(server::kSlotActive);
  const pid_t sibling = fork();
  if (sibling == 0) _exit(table->end_sessions_of("job:7"));
  int status = 0;
  waitpid(sibling, &status, 0);
  table->release(slot);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The drop signals a slot's pid only while it is a session of this server's
// listener (here, the test process): a pid that has gone to another program
// is left alone.
TEST(JobTokens, TheDropSignalsOnlyTheListenersSessions) {
  std::string error;
  server::SessionTable* table = server::SessionTable::create(&error);
  ASSERT_NE(table, nullptr) << error;
  const pid_t session = fork();
  if (session == 0) {
    pause();
    _exit(0);
  }
  EXPECT_EQ(ended_by_sibling(table, session), 1);
  int status = 0;
  waitpid(session, &status, 0);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);

  // A process that is not the listener's child, under a slot's pid.
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t middle = fork();
  if (middle == 0) {
    const pid_t grandchild = fork();
    if (grandchild == 0) {
      pause();
      _exit(0);
    }
    (void)!write(ready[1], &grandchild, sizeof grandchild);
    waitpid(grandchild, nullptr, 0);
    _exit(0);
  }
  pid_t stranger = 0;
  ASSERT_EQ(read(ready[0], &stranger, sizeof stranger), static_cast<ssize_t>(sizeof stranger));
  EXPECT_EQ(ended_by_sibling(table, stranger), 0);
  EXPECT_EQ(kill(stranger, 0), 0) << "a process outside the server was signalled";
  kill(stranger, SIGKILL);
  waitpid(middle, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
}

// A server given only a job key takes no client without a job's token.
TEST(JobTokens, AJobKeyAloneClosesTheServer) {
  JobTokenFiles files;
  ServerProcess server({"--job-key", files.path("job.key")});
  Output none = test::run_program({CLIENT_TOOL, "init"}, {"SCUDA_SERVER=" + server.address()});
  EXPECT_NE(none.exit_code, 0);
  EXPECT_NE(none.err.find("authentication failed"), std::string::npos) << none.err;
  EXPECT_EQ(init_with(server, files.mint("1", files.path("job.key"))).exit_code, 0);
}

}  // namespace
}  // namespace scuda
