// The scuda subcommands, each registered on the CLI11 app by its own file.
#pragma once

#include <CLI/CLI.hpp>

namespace scuda::cli {

void add_server_command(CLI::App& app);
void add_run_command(CLI::App& app);
void add_bench_command(CLI::App& app);
// `scuda status`: a server's GPUs and sessions.
void add_status_command(CLI::App& app);
// `scuda HOST:PORT` (a positional argument of the app itself): remembers
// the server that answers there as this machine's.
void add_remember_command(CLI::App& app);
// `scuda cert`: a self-signed CA and certificates for TLS.
void add_cert_command(CLI::App& app);
// `scuda token mint|drop`: per-job tokens for a scheduler (token_command.cc).
void add_token_command(CLI::App& app);

}  // namespace scuda::cli
