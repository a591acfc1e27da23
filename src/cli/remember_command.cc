// `scuda HOST:PORT`: check that a scuda server answers there, then make it
// this machine's server (~/.config/scuda/host), so that `scuda run` and the
// preloaded library need no --server.
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "cli/commands.h"
#include "common/config.h"
#include "common/server_request.h"
#include "protocol/handshake.h"
#include "protocol/ops.h"

namespace scuda::cli {

namespace {

struct RememberArgs {
  std::string address;
  std::string token_file;
};

// Handshakes with the server at `address`, as a client would; *gpus names
// its GPUs, or *error says why it did not take the client.
bool handshake(const std::string& address, const std::string& token, std::string* gpus,
               std::string* error) {
  std::vector<uint8_t> body;
  // The session loads the driver and looks at every GPU before it answers.
  if (!ask_server({address, protocol::kOpHello, token, "this machine", std::chrono::seconds(60)},
                  &body, error))
    return false;
  protocol::Reader r(body);
  protocol::Welcome welcome;
  if (!protocol::decode(r, &welcome)) {
    *error = fmt::format("{} answered with a handshake this scuda cannot read", address);
    return false;
  }
  *gpus = fmt::format("{} GPU{}", welcome.devices.size(), welcome.devices.size() == 1 ? "" : "s");
  for (size_t i = 0; i < welcome.devices.size(); ++i)
    *gpus += fmt::format("{} {}", i == 0 ? ":" : ",", welcome.devices[i].name);
  return true;
}

// Writes `address` as the first line of ~/.config/scuda/host; its path, or
// "" with *error.
std::string write_host_file(const std::string& address, std::string* error) {
  const char* home = std::getenv("HOME");
  if (!home || *home != '/') {
    *error = "HOME is not set, so there is no ~/.config/scuda/host to write";
    return "";
  }
  const std::filesystem::path dir = std::filesystem::path(home) / ".config" / "scuda";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  std::ofstream out(dir / "host");
  if (!(out << address << "\n").flush()) {
    *error = fmt::format("cannot write {}", (dir / "host").string());
    return "";
  }
  return (dir / "host").string();
}

int remember(const RememberArgs& args) {
  std::string token, gpus, error;
  const std::string token_file =
      args.token_file.empty() ? configured_token_file() : args.token_file;
  if (!token_file.empty() && !read_token_file(token_file, &token, &error)) {
    fmt::print(stderr, "scuda: {}\n", error);
    return 2;
  }
  if (!handshake(args.address, token, &gpus, &error)) {
    fmt::print(stderr, "scuda: {}; ~/.config/scuda/host left as it was\n", error);
    return 1;
  }
  const std::string path = write_host_file(args.address, &error);
  if (path.empty()) {
    fmt::print(stderr, "scuda: {}\n", error);
    return 1;
  }
  fmt::print(
      "scuda server {} answers ({}); wrote it to {}, so CUDA programs run with "
      "`scuda run` or the preloaded library use it{}\n",
      args.address, gpus, path,
      token.empty() ? "" : " (they still need the token: --token-file or SCUDA_TOKEN_FILE)");
  return 0;
}

}  // namespace

void add_remember_command(CLI::App& app) {
  auto args = std::make_shared<RememberArgs>();
  app.add_option("address", args->address,
                 "HOST:PORT of a scuda server: check that it answers, then make it this "
                 "machine's server (~/.config/scuda/host)");
  app.add_option("--token-file", args->token_file,
                 "With HOST:PORT: the server's token file (default: SCUDA_TOKEN_FILE)")
      ->check(CLI::ExistingFile);
  app.callback([args, &app] {
    if (!args->address.empty()) std::exit(remember(*args));
    if (app.get_subcommands().empty())
      throw CLI::RequiredError("a command (see --help) or a server's HOST:PORT");
  });
}

}  // namespace scuda::cli
