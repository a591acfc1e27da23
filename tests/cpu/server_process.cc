#include "server_process.h"

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "common/socket.h"

namespace scuda::test {

int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

SlowLink::SlowLink(const std::string& link_bin, const ServerProcess& server,
                   const std::vector<std::string>& args)
    : address_("127.0.0.1:" + std::to_string(free_port())) {
  std::vector<std::string> words = {link_bin, "--listen", address_, "--to", server.address()};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  pid_ = fork();
  if (pid_ == 0) {
    execv(argv[0], argv.data());
    _exit(127);
  }
  usleep(300000);  // the relay listens
}

SlowLink::~SlowLink() {
  if (pid_ <= 0) return;
  kill(pid_, SIGTERM);
  waitpid(pid_, nullptr, 0);
}

namespace {

std::string tmp_dir() {
  const char* t = std::getenv("TMPDIR");
  return t && *t ? t : "/tmp";
}

std::vector<char*> c_strings(std::vector<std::string>& v) {
  std::vector<char*> out;
  for (std::string& s : v) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Whether a socket listens on `address`, read from /proc/net/tcp rather than
// by connecting, which would start a session of its own.
bool listening(const std::string& address) {
  HostPort hp;
  std::string error;
  parse_host_port(address, &hp, &error);
  std::ifstream in("/proc/net/tcp");
  std::string line;
  char wanted[16];
  std::snprintf(wanted, sizeof wanted, ":%04X", hp.port);
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, remote, state;
    fields >> slot >> local >> remote >> state;
    if (state == "0A" && local.size() > 5 && local.substr(local.size() - 5) == wanted) return true;
  }
  return false;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The address the server printed it listens on ("scuda server listening
// on HOST:PORT"), or "" while it has not.
std::string printed_address(const std::string& stdout_path) {
  const std::string text = slurp(stdout_path);
  const std::string prefix = "scuda server listening on ";
  const size_t at = text.find(prefix), end = text.find_first_of(" \n", at + prefix.size());
  if (at == std::string::npos || end == std::string::npos) return "";
  return text.substr(at + prefix.size(), end - at - prefix.size());
}

}  // namespace

// Port 0: the server binds a port the system picks and prints it, so that
// no other process can take the port between its choice and the bind.
ServerProcess::ServerProcess(std::vector<std::string> extra_args) {
  launch_log_ = tmp_dir() + "/launches-" + std::to_string(getpid()) + "-" +
                std::to_string(reinterpret_cast<uintptr_t>(this)) + ".log";
  const std::string stdout_path = launch_log_ + ".stdout";  // output() reads it
  std::vector<std::string> argv = {SCUDA_BIN, "server", "--driver", DOUBLE_LIB};
  // A test that names the address (a server started again where one was)
  // gets it; the others a port the system picks.
  if (std::find(extra_args.begin(), extra_args.end(), "-l") == extra_args.end())
    argv.insert(argv.end(), {"-l", "127.0.0.1:0"});
  // stop() ends sessions at once unless a test asks for a drain.
  if (std::find(extra_args.begin(), extra_args.end(), "--drain-timeout") == extra_args.end())
    argv.insert(argv.end(), {"--drain-timeout", "0"});
  argv.insert(argv.end(), extra_args.begin(), extra_args.end());
  // Emptied before the server starts: the path is reused by the next server
  // at the same address, whose start line must not be read from the last's.
  std::ofstream(stdout_path, std::ios::trunc);
  pid_ = fork();
  if (pid_ == 0) {
    setenv("SCUDA_DOUBLE_LOG", launch_log_.c_str(), 1);
    // The default module cache lives under XDG_CACHE_HOME: keep tests out of ~.
    setenv("XDG_CACHE_HOME", (launch_log_ + ".cache").c_str(), 1);
    freopen(stdout_path.c_str(), "w", stdout);
    freopen((launch_log_ + ".stderr").c_str(), "w", stderr);
    auto args = c_strings(argv);
    execv(args[0], args.data());
    _exit(127);
  }
  for (int i = 0; i < 200 && (address_ = printed_address(stdout_path)).empty(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (address_.empty() || !listening(address_))
    throw std::runtime_error("scuda server did not say where it listens: " + slurp(stdout_path));
}

ServerProcess::~ServerProcess() { stop(); }

std::string ServerProcess::log() const { return slurp(launch_log_ + ".stderr"); }

std::string ServerProcess::output() const { return slurp(launch_log_ + ".stdout"); }

InteractiveClient::InteractiveClient(const ServerProcess& server, const std::string& scenario,
                                     const std::vector<std::string>& env) {
  int in[2], out[2];
  if (pipe(in) != 0 || pipe(out) != 0) throw std::runtime_error("pipe failed");
  err_path_ = tmp_dir() + "/client-" + std::to_string(getpid()) + "-" +
              std::to_string(reinterpret_cast<uintptr_t>(this)) + ".err";
  pid_ = fork();
  if (pid_ == 0) {
    dup2(in[0], STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    freopen(err_path_.c_str(), "w", stderr);
    setenv("SCUDA_SERVER", server.address().c_str(), 1);
    for (const std::string& kv : env) putenv(strdup(kv.c_str()));
    signal(SIGPIPE, SIG_DFL);  // as a program starts, whatever this test process does
    execl(CLIENT_TOOL, CLIENT_TOOL, scenario.c_str(), nullptr);
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  to_child_ = in[1];
  from_child_ = fdopen(out[0], "r");
}

InteractiveClient::~InteractiveClient() {
  if (pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (from_child_) fclose(static_cast<FILE*>(from_child_));
  if (to_child_ >= 0) close(to_child_);
  unlink(err_path_.c_str());
}

std::string InteractiveClient::line() {
  char text[256] = {};
  return fgets(text, sizeof text, static_cast<FILE*>(from_child_)) ? text : "";
}

bool InteractiveClient::go() { return write(to_child_, "go\n", 3) == 3; }

int InteractiveClient::wait() {
  int status = -1;
  if (pid_ > 0 && waitpid(pid_, &status, 0) == pid_) pid_ = -1;
  return status;
}

std::string InteractiveClient::err() const { return slurp(err_path_); }

std::vector<Child> children_of(pid_t parent) {
  std::vector<Child> out;
  const std::string list =
      slurp("/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) + "/children");
  std::istringstream pids(list);
  for (pid_t pid; pids >> pid;) {
    const std::string stat = slurp("/proc/" + std::to_string(pid) + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;  // already reaped
    const char state = stat[paren + 2];
    const int code = std::stoi(stat.substr(stat.rfind(' ') + 1));
    out.push_back({pid, state == 'Z', code});
  }
  return out;
}

bool all_ended(pid_t parent) {
  for (const Child& c : children_of(parent))
    if (!c.ended) return false;
  return true;
}

void ServerProcess::stop() { wait_for_exit(SIGTERM); }

int ServerProcess::wait_for_exit(int sig) {
  if (pid_ <= 0) return -1;
  if (sig) kill(pid_, sig);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return status;
}

Output run_program(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  // Threads of one test may run programs at once: each run has its own files.
  static std::atomic<int> runs{0};
  const std::string base =
      tmp_dir() + "/run-" + std::to_string(getpid()) + "-" + std::to_string(runs++);
  const std::string out_path = base + ".out", err_path = base + ".err";
  pid_t pid = fork();
  if (pid == 0) {
    for (const std::string& kv : env) putenv(strdup(kv.c_str()));
    freopen(out_path.c_str(), "w", stdout);
    freopen(err_path.c_str(), "w", stderr);
    std::vector<std::string> copy = argv;
    auto args = c_strings(copy);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  Output o;
  o.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  o.out = slurp(out_path);
  o.err = slurp(err_path);
  unlink(out_path.c_str());
  unlink(err_path.c_str());
  return o;
}

}  // namespace scuda::test
