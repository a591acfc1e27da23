// `scuda bench`: scuda's protocol-overhead figures (bench/README.md). Starts
// a loopback server and a raw-TCP peer unless told where they are, puts an
// emulated link in front of both if asked, and runs scuda-bench-micro.
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/certificates.h"
#include "cli/commands.h"

namespace scuda::cli {

namespace {

struct BenchArgs {
  std::string server;
  std::string token_file;
  std::string driver;
  std::string link = "none";
  std::string echo;
  std::string json;
  std::string module = "auto";
  bool quick = false;
};

struct LinkProfile {
  double rtt_ms;
  double gbit;  // 0: no limit
};

const std::map<std::string, LinkProfile> kProfiles = {
    {"1ms-10gbit", {1, 10}}, {"1ms-1gbit", {1, 1}}, {"150ms", {150, 0}}};

std::filesystem::path bin_dir() {
  return std::filesystem::canonical("/proc/self/exe").parent_path();
}

// A port on 127.0.0.1 that the kernel has just handed out, for a child to
// listen on; throws when there is none to be had.
int free_loopback_port() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  const int error = errno;
  if (fd >= 0) close(fd);
  if (!ok)
    throw std::runtime_error(
        fmt::format("no free port on 127.0.0.1 for the bench: {}", std::strerror(error)));
  return ntohs(a.sin_port);
}

// Read from /proc/net/tcp: connecting to the server would start a session.
bool listening(int port) {
  std::ifstream in("/proc/net/tcp");
  const std::string wanted = fmt::format(":{:04X}", port);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    if (state == "0A" && local.size() > 5 && local.substr(local.size() - 5) == wanted) return true;
  }
  return false;
}

// The processes this command starts, stopped (by pid) when it returns.
class Children {
 public:
  ~Children() {
    for (pid_t pid : pids_) kill(pid, SIGTERM);
    for (pid_t pid : pids_) waitpid(pid, nullptr, 0);
  }

  // Starts argv with extra environment ("NAME=value").
  static pid_t start(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
    pid_t pid = fork();
    if (pid != 0) return pid;
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    for (const std::string& kv : env) putenv(strdup(kv.c_str()));
    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }

  // Starts a process that listens on 127.0.0.1:port; returns that address.
  std::string start_listener(const std::vector<std::string>& argv, int port) {
    const pid_t pid = start(argv, {});
    pids_.push_back(pid);
    for (int i = 0; i < 500 && !listening(port); ++i) {
      if (waitpid(pid, nullptr, WNOHANG) == pid) {
        pids_.pop_back();
        throw std::runtime_error(fmt::format("{} exited before listening", argv[0]));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!listening(port)) throw std::runtime_error(fmt::format("{} did not listen", argv[0]));
    return fmt::format("127.0.0.1:{}", port);
  }

 private:
  std::vector<pid_t> pids_;
};

std::string start_server(Children& kids, const BenchArgs& args) {
  const int port = free_loopback_port();
  std::vector<std::string> argv = {(bin_dir() / "scuda").string(), "server", "-l",
                                   fmt::format("127.0.0.1:{}", port)};
  if (!args.driver.empty()) argv.insert(argv.end(), {"--driver", args.driver});
  return kids.start_listener(argv, port);
}

std::string start_echo(Children& kids) {
  const int port = free_loopback_port();
  return kids.start_listener({(bin_dir() / "scuda-bench-micro").string(), "--echo-server",
                              fmt::format("127.0.0.1:{}", port)},
                             port);
}

std::string start_link(Children& kids, const std::string& to, const LinkProfile& p) {
  const int port = free_loopback_port();
  return kids.start_listener(
      {(bin_dir() / "scuda-link").string(), "--listen", fmt::format("127.0.0.1:{}", port), "--to",
       to, "--rtt-ms", fmt::format("{}", p.rtt_ms), "--gbit", fmt::format("{}", p.gbit)},
      port);
}

// Through `scuda run`, so that the stand-in is loaded exactly as for any
// program (on a GPU host the real libcuda.so.1 may come first otherwise).
// `run_flags` go to `scuda run`, `micro_flags` to the benchmark.
int run_micro(const BenchArgs& args, const std::string& server,
              const std::vector<std::string>& run_flags,
              const std::vector<std::string>& micro_flags) {
  std::vector<std::string> argv = {(bin_dir() / "scuda").string(), "run", "--server", server};
  if (!args.token_file.empty())
    argv.insert(argv.end(), {"--token-file", std::filesystem::absolute(args.token_file).string()});
  argv.insert(argv.end(), run_flags.begin(), run_flags.end());
  argv.insert(argv.end(), {"--", (bin_dir() / "scuda-bench-micro").string()});
  argv.insert(argv.end(), micro_flags.begin(), micro_flags.end());
  if (args.quick) argv.push_back("--quick");
  int status = 0;
  waitpid(Children::start(argv, {}), &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int run_micro(const BenchArgs& args, const std::string& server, const std::string& echo) {
  std::vector<std::string> flags = {"--echo", echo, "--link", args.link, "--module", args.module};
  if (!args.json.empty()) flags.insert(flags.end(), {"--json", args.json});
  return run_micro(args, server, {}, flags);
}

// A directory of its own under $TMPDIR, removed when it goes.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "scuda-bench-XXXXXX").string();
    if (!mkdtemp(pattern.data())) throw std::runtime_error("cannot make a temporary directory");
    path_ = pattern;
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string operator/(const char* name) const { return (path_ / name).string(); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

nlohmann::json copies_over(const BenchArgs& args, const std::string& server,
                           const std::vector<std::string>& run_flags, const std::string& json) {
  if (run_micro(args, server, run_flags, {"--copies-only", "--json", json}) != 0)
    throw std::runtime_error(fmt::format("the copies against {} failed", server));
  return nlohmann::json::parse(std::ifstream(json));
}

// Copy throughput over TLS beside plain TCP, measured in this run: a second
// loopback server with a fresh self-signed certificate, and a copies-only
// run of the benchmark against each server, one after the other. The
// figures join the JSON as tls_*.
void compare_tls(Children& kids, const BenchArgs& args, const std::string& plain) {
  TempDir dir;
  std::string error;
  if (!make_certificates({dir.path().string(), {"127.0.0.1"}, 1}, &error))
    throw std::runtime_error(error);
  const int port = free_loopback_port();
  std::vector<std::string> argv = {(bin_dir() / "scuda").string(),
                                   "server",
                                   "-l",
                                   fmt::format("127.0.0.1:{}", port),
                                   "--tls-cert",
                                   dir / "server.pem",
                                   "--tls-key",
                                   dir / "server.key"};
  if (!args.driver.empty()) argv.insert(argv.end(), {"--driver", args.driver});
  const std::string tls = "tls://" + kids.start_listener(argv, port);
  const nlohmann::json p = copies_over(args, plain, {}, dir / "plain.json");
  const nlohmann::json t = copies_over(args, tls, {"--tls-ca", dir / "ca.pem"}, dir / "tls.json");
  nlohmann::json figures;
  fmt::print(
      "\nCopy throughput over TLS 1.3 beside plain TCP, in this run:\n\n"
      "| figure | plain | TLS | tls / plain |\n|---|---:|---:|---:|\n");
  for (const char* key : {"h2d_gbps", "d2h_gbps"}) {
    const double ratio = t[key].get<double>() / p[key].get<double>();
    fmt::print("| {} pageable, Gbit/s | {:.3g} | {:.3g} | {:.3g} |\n",
               key[0] == 'h' ? "H2D" : "D2H", p[key].get<double>(), t[key].get<double>(), ratio);
    figures[fmt::format("tls_{}", key)] = t[key];
    figures[fmt::format("tls_{}_ratio", std::string(key, 3))] = ratio;
  }
  if (args.json.empty()) return;
  nlohmann::json all = nlohmann::json::parse(std::ifstream(args.json));
  all.update(figures);
  std::ofstream(args.json) << all.dump(2) << "\n";
}

int run_bench(const BenchArgs& args) {
  if (!args.server.empty() && args.echo.empty())
    fmt::print(stderr,
               "scuda bench: no --echo peer given, so the raw-TCP figures are taken on "
               "loopback, not on the link to {}\n",
               args.server);
  try {
    Children kids;
    std::string server = args.server.empty() ? start_server(kids, args) : args.server;
    std::string echo = args.echo.empty() ? start_echo(kids) : args.echo;
    if (args.link != "none") {
      server = start_link(kids, server, kProfiles.at(args.link));
      echo = start_link(kids, echo, kProfiles.at(args.link));
    }
    const int rc = run_micro(args, server, echo);
    // Beside a server of its own only: a given server's certificate is not
    // this command's to make.
    if (rc == 0 && args.server.empty() && args.link == "none") compare_tls(kids, args, server);
    return rc;
  } catch (const std::exception& e) {
    fmt::print(stderr, "scuda bench: {}\n", e.what());
    return 1;
  }
}

}  // namespace

void add_bench_command(CLI::App& app) {
  auto args = std::make_shared<BenchArgs>();
  CLI::App* cmd = app.add_subcommand(
      "bench", "Measure scuda's protocol overhead beside plain TCP on the same link");
  cmd->add_option("--server", args->server,
                  "Benchmark this server HOST:PORT (default: start one on loopback)");
  cmd->add_option("--token-file", args->token_file, "File holding the server's token")
      ->check(CLI::ExistingFile);
  cmd->add_option("--driver", args->driver,
                  "Driver for the loopback server (e.g. build/lib/libcuda_double.so)");
  std::vector<std::string> links = {"none"};
  for (const auto& [name, profile] : kProfiles) links.push_back(name);
  cmd->add_option("--link", args->link, "Emulated link in front of server and peer")
      ->check(CLI::IsMember(links))
      ->capture_default_str();
  cmd->add_option("--echo", args->echo,
                  "Raw-TCP peer HOST:PORT (`scuda-bench-micro --echo-server` on the server's "
                  "host; default: start one on loopback)");
  cmd->add_option("--json", args->json, "Write the figures as JSON to FILE");
  cmd->add_option("--module", args->module, "Empty-kernel image: auto, double or ptx")
      ->check(CLI::IsMember({"auto", "double", "ptx"}))
      ->capture_default_str();
  cmd->add_flag("--quick", args->quick, "Small sizes and few iterations (a smoke test)");
  cmd->callback([args] { std::exit(run_bench(*args)); });
}

}  // namespace scuda::cli
