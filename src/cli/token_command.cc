// `scuda token mint` and `scuda token drop`: the per-job tokens a scheduler's
// prolog makes and its epilog drops (common/job_tokens.h, docs/protocol.md).
#include <cstdlib>
#include <ctime>

#include <fmt/format.h>

#include "cli/commands.h"
#include "cli/tls_options.h"
#include "common/config.h"
#include "common/job_tokens.h"
#include "common/server_request.h"
#include "protocol/ops.h"

namespace scuda::cli {

namespace {

// A job without a time limit: its token lasts this long, unless dropped.
constexpr int64_t kDefaultLifetime = int64_t{7} * 24 * 3600;
// Ten years: an expiry the clock's seconds hold with room to spare.
constexpr int64_t kLongestLifetime = int64_t{3650} * 24 * 3600;

struct MintArgs {
  std::string key_file;
  std::string job;
  int64_t lifetime = kDefaultLifetime;
};

struct DropArgs {
  std::string server;
  std::string token_file;
  TlsArgs tls;
};

int mint(const MintArgs& args) {
  std::string key, error;
  if (!read_job_key(args.key_file, &key, &error)) {
    fmt::print(stderr, "scuda token mint: {}\n", error);
    return 2;
  }
  const std::string token = mint_job_token(key, args.job, std::time(nullptr) + args.lifetime);
  if (token.empty()) {
    fmt::print(stderr,
               "scuda token mint: a job id is 1 to 48 letters, digits, '-' or '_', not '{}'\n",
               args.job);
    return 2;
  }
  fmt::print("{}\n", token);
  return 0;
}

// Each server of the list in turn: a job may hold GPUs of several.
int drop(const DropArgs& args) {
  const std::vector<std::string> servers =
      split_servers(args.server.empty() ? configured_server() : args.server);
  const std::string token_file =
      args.token_file.empty() ? configured_token_file() : args.token_file;
  std::string token, error;
  if (servers.empty() || token_file.empty() || !read_token_file(token_file, &token, &error)) {
    fmt::print(stderr, "scuda token drop: {}\n",
               servers.empty()      ? "no server: give --server HOST:PORT or set SCUDA_SERVER"
               : token_file.empty() ? "no token: give --token-file FILE or set SCUDA_TOKEN_FILE"
                                    : error);
    return 2;
  }
  if (!looks_like_job_token(token)) {
    fmt::print(stderr, "scuda token drop: {} holds no job's token (`scuda token mint` makes one)\n",
               token_file);
    return 2;
  }
  export_tls_env(args.tls);
  bool ok = true;
  for (const std::string& address : servers) {
    std::vector<uint8_t> body;
    if (!ask_server(
            {address, protocol::kOpTokenDrop, token, "the token drop", std::chrono::seconds(10)},
            &body, &error)) {
      fmt::print(stderr, "scuda token drop: {}\n", error);
      ok = false;
      continue;
    }
    fmt::print("{}: {}\n", address, std::string(body.begin(), body.end()));
  }
  return ok ? 0 : 1;
}

}  // namespace

void add_token_command(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "token", "Per-job tokens: mint one for a scheduler's job, drop it when the job ends");
  cmd->require_subcommand(1);
  auto m = std::make_shared<MintArgs>();
  CLI::App* mint_cmd = cmd->add_subcommand(
      "mint", "Print a token for one job, from the key its servers take with --job-key");
  mint_cmd->add_option("--key", m->key_file, "File holding the servers' job key")
      ->required()
      ->check(CLI::ExistingFile);
  mint_cmd->add_option("--job", m->job, "The scheduler's job id")->required();
  mint_cmd
      ->add_option("--lifetime", m->lifetime,
                   "Seconds the token works for at most, unless dropped (the job's time limit)")
      ->check(CLI::Range(int64_t{1}, kLongestLifetime))
      ->capture_default_str();
  mint_cmd->callback([m] { std::exit(mint(*m)); });
  auto d = std::make_shared<DropArgs>();
  CLI::App* drop_cmd = cmd->add_subcommand(
      "drop",
      "End a job's sessions on its servers and refuse its token from now on (a job's epilog)");
  drop_cmd->add_option("--server", d->server,
                       "Server HOST:PORT, or a list a,b (default: SCUDA_SERVER)");
  drop_cmd
      ->add_option("--token-file", d->token_file,
                   "File holding the job's token (default: SCUDA_TOKEN_FILE)")
      ->check(CLI::ExistingFile);
  add_tls_options(drop_cmd, &d->tls);
  drop_cmd->callback([d] { std::exit(drop(*d)); });
}

}  // namespace scuda::cli
