// `scuda run`: start a program with the stand-in driver in place.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/commands.h"
#include "cli/tls_options.h"
#include "common/config.h"
#include "common/server_pick.h"

namespace scuda::cli {

namespace {

struct RunArgs {
  std::vector<std::string> servers;  // --server, each may be a list
  std::string pick;                  // "first" or "least-loaded"
  std::string token_file;
  bool stats = false;
  std::string stats_json;
  std::string compress;
  std::string wait_timeout;    // seconds, as SCUDA_WAIT_TIMEOUT
  std::string server_timeout;  // seconds, as SCUDA_SERVER_TIMEOUT
  TlsArgs tls;
  std::vector<std::string> command;
};

// The stand-in libraries live in ../lib beside this executable.
std::filesystem::path library_dir() {
  return std::filesystem::canonical("/proc/self/exe").parent_path().parent_path() / "lib";
}

void prepend_env(const char* name, const std::string& value, char separator) {
  const char* old = std::getenv(name);
  const std::string joined = old && *old ? value + separator + old : value;
  setenv(name, joined.c_str(), 1);
}

// With SCUDA_PICK=least-loaded, the servers are ordered here, once, and the
// program's processes take the order as it is (SCUDA_PICK=first): processes
// of one job that each measured the loads would spread over the servers,
// and those that share memory (CUDA IPC, DDP's ranks) must not. False,
// having said why, when no server answers.
bool pick_once() {
  const char* pick = std::getenv("SCUDA_PICK");
  std::vector<std::string> servers = split_servers(configured_server());
  if (!pick || std::string(pick) != "least-loaded" || servers.size() < 2) return true;
  std::string token, error, chosen;
  const std::string token_file = configured_token_file();
  std::vector<std::string> left_out;
  if (!token_file.empty() && !read_token_file(token_file, &token, &error)) {
    fmt::print(stderr, "scuda run: {}\n", error);
    return false;
  }
  const bool ordered = order_by_load(&servers, token, &left_out, &chosen, &error);
  for (const std::string& why : left_out)
    fmt::print(stderr, "scuda run: leaving a server out of the pick: {}\n", why);
  if (!ordered) {
    fmt::print(stderr, "scuda run: {}\n", error);
    return false;
  }
  fmt::print(stderr, "scuda run: {}\n", chosen);
  setenv("SCUDA_SERVER", fmt::format("{}", fmt::join(servers, ",")).c_str(), 1);
  setenv("SCUDA_PICK", "first", 1);
  return true;
}

// With several servers as one list of devices, NCCL finds ranks' GPUs on
// two servers that CUDA says are no peers; where the servers share a host
// NVML still shows the NVLink between them, and NCCL stops ("P2P is
// disabled between NVLINK connected GPUs"), and its shared-memory
// transport maps segments that scuda cannot keep in step while kernels
// run. Its socket transport works (live mirrors, docs/managed-memory.md),
// so NCCL is told to take it between such GPUs, unless the program's
// environment says otherwise. GPUs of one server stay peers (P2P is tried
// first).
void nccl_across_servers() {
  const char* pick = std::getenv("SCUDA_PICK");
  if ((pick && *pick) || split_servers(configured_server()).size() < 2) return;
  setenv("NCCL_IGNORE_DISABLED_P2P", "1", 0);
  setenv("NCCL_SHM_DISABLE", "1", 0);
  fmt::print(stderr,
             "scuda run: for NCCL between GPUs of two servers, NCCL_IGNORE_DISABLED_P2P={} "
             "NCCL_SHM_DISABLE={} (both 1: its socket transport, through live mirrors)\n",
             std::getenv("NCCL_IGNORE_DISABLED_P2P"), std::getenv("NCCL_SHM_DISABLE"));
}

int run_program(const RunArgs& args) {
  const std::filesystem::path lib = library_dir();
  if (!std::filesystem::exists(lib / "libcuda.so.1")) {
    fmt::print(stderr, "scuda run: {} has no libcuda.so.1; is scuda built?\n", lib.string());
    return 127;
  }
  if (!args.servers.empty())
    setenv("SCUDA_SERVER", fmt::format("{}", fmt::join(args.servers, ",")).c_str(), 1);
  if (args.stats) setenv("SCUDA_STATS", "1", 1);
  if (!args.stats_json.empty())
    setenv("SCUDA_STATS_JSON", std::filesystem::absolute(args.stats_json).c_str(), 1);
  if (!args.compress.empty()) setenv("SCUDA_COMPRESS", args.compress.c_str(), 1);
  if (!args.wait_timeout.empty()) setenv("SCUDA_WAIT_TIMEOUT", args.wait_timeout.c_str(), 1);
  if (!args.server_timeout.empty()) setenv("SCUDA_SERVER_TIMEOUT", args.server_timeout.c_str(), 1);
  set_path_env("SCUDA_TOKEN_FILE", args.token_file);
  export_tls_env(args.tls);
  if (!args.pick.empty()) setenv("SCUDA_PICK", args.pick.c_str(), 1);
  if (!pick_once()) return 1;
  nccl_across_servers();
  prepend_env("LD_LIBRARY_PATH", lib.string(), ':');
  // Triton links its launchers against the libcuda it finds here.
  setenv("TRITON_LIBCUDA_PATH", lib.c_str(), 0);
  // libscuda.so is a link to libcuda.so.1, absent where the libraries come
  // without links (a wheel); then the library itself is preloaded.
  const std::filesystem::path preload =
      std::filesystem::exists(lib / "libscuda.so") ? lib / "libscuda.so" : lib / "libcuda.so.1";
  prepend_env("LD_PRELOAD", preload.string(), ':');

  std::vector<char*> argv;
  for (const std::string& a : args.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  fmt::print(stderr, "scuda run: cannot run '{}': {}\n", args.command[0], std::strerror(errno));
  return errno == ENOENT ? 127 : 126;
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  CLI::App* cmd =
      app.add_subcommand("run", "Run a program whose CUDA work executes on the scuda server");
  cmd->add_option("--server", args->servers,
                  "Server HOST:PORT, or tls://HOST:PORT (default: SCUDA_SERVER, then "
                  "~/.config/scuda/host); given more than once, or as a list a,b: several servers, "
                  "whose GPUs are one list of devices, or of which --pick chooses one")
      ->allow_extra_args(false);
  cmd->add_option("--pick", args->pick,
                  "Which of several servers the program uses: first (the first that takes it, "
                  "in the order given), least-loaded (asks each for its status: fewest "
                  "sessions per GPU, then most free memory) or local-rank (each process of a "
                  "job the one at its LOCAL_RANK or SLURM_LOCALID, one GPU per rank) "
                  "(default: SCUDA_PICK)")
      ->check(CLI::IsMember({"first", "least-loaded", "local-rank"}));
  cmd->add_option("--token-file", args->token_file, "File holding the server's token")
      ->check(CLI::ExistingFile);
  add_tls_options(cmd, &args->tls);
  cmd->add_flag("--stats", args->stats,
                "At exit, print each driver function's calls, one-way and synchronous "
                "requests, bytes and time waited");
  cmd->add_option("--stats-json", args->stats_json, "At exit, write the same as JSON to FILE");
  cmd->add_option("--compress", args->compress,
                  "lz4 for host<->device copies: off, auto (when the link is slower than lz4 "
                  "and the data shrinks) or on (default: SCUDA_COMPRESS, else auto)")
      ->check(CLI::IsMember({"off", "auto", "on"}));
  cmd->add_option("--wait-timeout", args->wait_timeout,
                  "Seconds to wait for a place on a server at its session limit, 0 not to wait "
                  "(default: SCUDA_WAIT_TIMEOUT, else 300)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--server-timeout", args->server_timeout,
                  "Seconds of silence from the server, while a call waits for it, before the "
                  "call fails, 0 for none (default: SCUDA_SERVER_TIMEOUT, else 15)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("command", args->command, "The program and its arguments, after --")->required();
  cmd->callback([args] { std::exit(run_program(*args)); });
}

}  // namespace scuda::cli
