// The session's sign of life while it serves a request: a client waiting
// for a reply that hears nothing for long takes the server for lost
// (client/transport/connection.h, server_silence_limit), so a request that keeps the
// session busy (a long synchronize, a JIT compile) must not look like a
// frozen server. A thread sends an empty output frame, which clients skip,
// every period while a request is being served and its reply has not begun.
// The period is far below the shortest limit a client may set (one
// second), and it runs across requests: a queue of one-way requests that
// each take less than a period still beats.
#pragma once

#include <chrono>
#include <mutex>

#include "common/socket.h"

namespace scuda::server {

class Heartbeat {
 public:
  // Starts the thread that writes to `socket` (the session's connection,
  // plain or TLS), which must outlive it.
  void start(Socket& socket, std::chrono::milliseconds period = std::chrono::milliseconds(250));

  // Around each request, from the read of its payload to the end of its
  // handler: from enter() the thread may write between the session's
  // bytes, until begin_reply() (the handler's own reply starts) or leave().
  void enter();
  void begin_reply();
  void leave();

 private:
  void beat();

  Socket* socket_ = nullptr;
  std::chrono::milliseconds period_{250};
  std::mutex mu_;  // held by a write of the thread's, and by each change below
  bool serving_ = false;
  bool replying_ = false;
  std::chrono::steady_clock::time_point last_{};  // the last heartbeat
};

}  // namespace scuda::server
