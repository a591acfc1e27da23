// The session process's standard output, where the driver prints what
// kernels printf: captured through a pipe, so that the session can relay it
// to the client, whose program expects it on its own stdout.
#pragma once

#include <mutex>
#include <string>

namespace scuda::server {

class SessionOutput {
 public:
  // Points file descriptor 1 at the pipe and starts the thread that keeps
  // it drained (a driver blocked on a full pipe would never return). False,
  // and the output stays where it was, if the pipe cannot be made.
  bool start();
  // Everything printed since the last take, including what is still in
  // the pipe: the driver has written it by the time its call returns.
  std::string take();

 private:
  void drain();  // with mu_ held

  int fd_ = -1;
  std::mutex mu_;
  std::string buffered_;
};

}  // namespace scuda::server
