// `scuda status`: the server's GPUs and sessions, as a table or as JSON.
#include <cstdlib>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/status_text.h"
#include "cli/tls_options.h"
#include "common/config.h"
#include "common/server_request.h"
#include "protocol/ops.h"

namespace scuda::cli {

namespace {

struct StatusArgs {
  std::string server;
  std::string token_file;
  TlsArgs tls;
  bool json = false;
};

// The status JSON of the server at `address`; false with *error.
bool fetch_status(const std::string& address, const std::string& token, nlohmann::json* status,
                  std::string* error) {
  std::vector<uint8_t> body;
  if (!ask_server(
          {address, protocol::kOpStatus, token, "the status request", std::chrono::seconds(10)},
          &body, error))
    return false;
  *status = nlohmann::json::parse(body.begin(), body.end(), nullptr, false);
  if (status->is_discarded() || !status->is_object()) {
    *error = fmt::format("{} answered the status request with something other than JSON", address);
    return false;
  }
  return true;
}

// Prints one server's status; false, having said why, when it has none.
bool show_one(const std::string& address, const std::string& token, bool json,
              nlohmann::json* all) {
  nlohmann::json status;
  std::string error;
  if (!fetch_status(address, token, &status, &error)) {
    fmt::print(stderr, "scuda status: {}\n", error);
    return false;
  }
  if (all) {
    (*all)[address] = status;
    return true;
  }
  try {
    fmt::print("{}", json ? status.dump(2) + "\n" : status_text(address, status));
  } catch (const nlohmann::json::exception& e) {
    fmt::print(stderr,
               "scuda status: {} answered with status this scuda cannot read ({}); try "
               "--json\n",
               address, e.what());
    return false;
  }
  return true;
}

// A list of servers (a pool) shows each in turn; as JSON, one object keyed
// by address.
int show_status(const StatusArgs& args) {
  const std::vector<std::string> servers =
      split_servers(args.server.empty() ? configured_server() : args.server);
  if (servers.empty()) {
    fmt::print(stderr,
               "scuda status: no server: give --server HOST:PORT, set SCUDA_SERVER, or "
               "remember one with `scuda HOST:PORT`\n");
    return 2;
  }
  export_tls_env(args.tls);
  std::string token, error;
  const std::string token_file =
      args.token_file.empty() ? configured_token_file() : args.token_file;
  if (!token_file.empty() && !read_token_file(token_file, &token, &error)) {
    fmt::print(stderr, "scuda status: {}\n", error);
    return 2;
  }
  const bool pool = servers.size() > 1;
  nlohmann::json all = nlohmann::json::object();
  bool ok = true;
  for (const std::string& address : servers)
    ok = show_one(address, token, args.json, pool && args.json ? &all : nullptr) && ok;
  if (pool && args.json) fmt::print("{}\n", all.dump(2));
  return ok ? 0 : 1;
}

}  // namespace

void add_status_command(CLI::App& app) {
  auto args = std::make_shared<StatusArgs>();
  CLI::App* cmd = app.add_subcommand(
      "status",
      "Show a scuda server's GPUs and its client sessions (peer, age, device memory, "
      "bytes each way)");
  cmd->add_option("--server", args->server,
                  "Server HOST:PORT, or a list a,b of a pool (default: SCUDA_SERVER, then "
                  "~/.config/scuda/host)");
  cmd->add_option("--token-file", args->token_file,
                  "File holding the server's token (default: SCUDA_TOKEN_FILE)")
      ->check(CLI::ExistingFile);
  add_tls_options(cmd, &args->tls);
  cmd->add_flag("--json", args->json, "Print the server's answer as JSON");
  cmd->callback([args] { std::exit(show_status(*args)); });
}

}  // namespace scuda::cli
