// Starts `scuda server` on a free loopback port with the driver test double,
// for tests that need a real server; stops it when destroyed.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace scuda::test {

class ServerProcess {
 public:
  // Extra arguments go after the defaults (e.g. {"--token-file", path});
  // {"-l", address} replaces the free port of the default.
  explicit ServerProcess(std::vector<std::string> extra_args = {});
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  const std::string& address() const { return address_; }
  pid_t pid() const { return pid_; }
  // The file the driver double appends its launch and synchronize records to.
  const std::string& launch_log() const { return launch_log_; }
  void stop();
  // What the server has logged so far (its standard error).
  std::string log() const;
  // What the server has printed so far (its standard output: the start line).
  std::string output() const;
  // Sends `sig` (0: none) and waits for the server to end; its wait status.
  int wait_for_exit(int sig);

 private:
  pid_t pid_ = -1;
  std::string address_;
  std::string launch_log_;
};

// A child process of a server: a session, or a join's brief process.
struct Child {
  pid_t pid;
  bool ended;  // a zombie, not yet reaped
  int exit_code;
};

// The children of process `parent` (from /proc), reaped ones left out.
std::vector<Child> children_of(pid_t parent);
// True when every child of `parent` has ended.
bool all_ended(pid_t parent);

// A free TCP port on 127.0.0.1, as the kernel hands it out right now.
int free_port();

// The link emulator (scuda-link at `link_bin`) between a client and
// `server`, with its options `args` (e.g. {"--gbit", "0.04"}); stopped when
// destroyed.
class SlowLink {
 public:
  SlowLink(const std::string& link_bin, const ServerProcess& server,
           const std::vector<std::string>& args);
  ~SlowLink();
  SlowLink(const SlowLink&) = delete;
  SlowLink& operator=(const SlowLink&) = delete;

  // The address a client dials to go through the link.
  const std::string& address() const { return address_; }

 private:
  pid_t pid_ = -1;
  std::string address_;
};

struct Output {
  int exit_code = -1;
  std::string out;
  std::string err;
};

// A client_tool scenario that says "ready" and then waits for a line on its
// stdin ("launch-after-loss"), run against `server` with extra environment:
// the test acts on the server between the two.
class InteractiveClient {
 public:
  InteractiveClient(const ServerProcess& server, const std::string& scenario,
                    const std::vector<std::string>& env = {});
  ~InteractiveClient();
  InteractiveClient(const InteractiveClient&) = delete;
  InteractiveClient& operator=(const InteractiveClient&) = delete;

  // The next line the client printed, "" once it printed no more.
  std::string line();
  // Lets the client go on past its "ready".
  bool go();
  // Waits for the client to end: its wait status.
  int wait();
  // What it wrote to stderr so far.
  std::string err() const;

 private:
  pid_t pid_ = -1;
  int to_child_ = -1;
  void* from_child_ = nullptr;  // FILE*
  std::string err_path_;
};

// Runs a program to completion with extra environment, capturing output.
Output run_program(const std::vector<std::string>& argv, const std::vector<std::string>& env = {});

}  // namespace scuda::test
