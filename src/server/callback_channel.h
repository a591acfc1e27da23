// The session's callback channel (docs/protocol.md, "Host callbacks"): a
// second TCP connection from the client, on which the stand-in host function
// of each host callback says that its stream reached it, then waits until
// the client has run it, so that the stream's later work waits too. The
// client joins it through the session's join point (join_point.h).
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "common/socket.h"
#include "server/join_point.h"

namespace scuda::server {

class CallbackChannel {
 public:
  // Starts waiting for the client to join, the first time; says the local
  // socket's name and the secret that the join must carry.
  bool open(std::string* name, std::string* secret, std::string* error);

  // From a driver thread: tells the client that callback `id` was reached
  // and returns once it has run, one callback at a time. Returns at once
  // when there is no channel (the client went away).
  void reached(uint64_t id);

 private:
  // Keeps the first connection admitted.
  bool take(Socket client);
  void lose(bool client_left, const std::string& why);

  JoinPoint join_;
  std::mutex mu_;  // held for each callback, from "reached" to "done"
  Socket socket_;
};

// A session is its own process, so the channel is the process's.
CallbackChannel& callback_channel();

}  // namespace scuda::server
