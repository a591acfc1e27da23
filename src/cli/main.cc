// scuda: GPU over IP. `scuda server` on the GPU host, `scuda run` on the client.
#include <cuda.h>
#include <fmt/format.h>

#include "cli/commands.h"
#include "protocol/frame.h"

int main(int argc, char** argv) {
  CLI::App app{"scuda: run CUDA programs on a GPU in another machine, over TCP"};
  app.set_version_flag("--version", fmt::format("scuda 0.1.0 (protocol {}, CUDA {}.{} headers)",
                                                scuda::protocol::kProtocolVersion,
                                                CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10));
  app.require_subcommand(1);
  scuda::cli::add_server_command(app);
  scuda::cli::add_run_command(app);
  scuda::cli::add_bench_command(app);
  CLI11_PARSE(app, argc, argv);
  return 0;
}
