// scuda: GPU over IP. `scuda server` on the GPU host, `scuda run` on the client.
#include <cuda.h>
#include <fmt/format.h>

#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/version.h"
#include "common/log.h"
#include "common/main_guard.h"
#include "protocol/frame.h"

namespace {

char server_word[] = "server";

// Whether `arg` is `scuda server`'s listen option (-l, --listen), which
// alone on the command line starts a server.
bool is_listen_option(const std::string& arg) {
  return arg.rfind("-l", 0) == 0 || arg == "--listen" || arg.rfind("--listen=", 0) == 0;
}

int run(int argc, char** argv) {
  // Checked before any command runs: a misspelt level is a mistake to fix,
  // not a reason to log at another level than the one asked for.
  spdlog::level::level_enum level;
  std::string error;
  if (!scuda::env_log_level(&level, &error)) {
    fmt::print(stderr, "scuda: {}\n", error);
    return 2;
  }
  // `scuda -l HOST:PORT ...` is `scuda server -l HOST:PORT ...`, as short
  // to type as the server is quick to start.
  std::vector<char*> args(argv, argv + argc);
  if (argc > 1 && is_listen_option(argv[1])) args.insert(args.begin() + 1, server_word);
  CLI::App app{"scuda: run CUDA programs on a GPU in another machine, over TCP"};
  app.footer("`scuda -l HOST:PORT [OPTIONS]` is short for `scuda server -l HOST:PORT [OPTIONS]`.");
  app.set_version_flag(
      "--version", fmt::format("scuda {} (protocol {}, CUDA {}.{} headers)", scuda::cli::kVersion,
                               scuda::protocol::kProtocolVersion, CUDA_VERSION / 1000,
                               CUDA_VERSION % 1000 / 10));
  app.require_subcommand(0, 1);
  scuda::cli::add_server_command(app);
  scuda::cli::add_run_command(app);
  scuda::cli::add_bench_command(app);
  scuda::cli::add_status_command(app);
  scuda::cli::add_remember_command(app);
  scuda::cli::add_cert_command(app);
  scuda::cli::add_token_command(app);
  CLI11_PARSE(app, static_cast<int>(args.size()), args.data());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return scuda::run_main("scuda", [&] { return run(argc, argv); });
}
