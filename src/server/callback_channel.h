// The session's callback channel (docs/protocol.md, "Host callbacks"): a
// second TCP connection from the client, on which the stand-in host function
// of each host callback says that its stream reached it, then waits until
// the client has run it, so that the stream's later work waits too.
//
// The client joins through the listener, on the port it already uses: the
// process forked for the join hands the connection over a local socket that
// the session named (hand_over); the session admits it when the secret it
// gave out comes with it.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>

#include "common/socket.h"

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
  void accept_joins(Socket listener);
  // Takes the connection a join handed over when its secret is right.
  bool admit(Socket& peer);
  void lose(bool client_left, const std::string& why);

  std::mutex open_mu_;
  std::string name_;
  std::string secret_;
  std::mutex mu_;  // held for each callback, from "reached" to "done"
  Socket socket_;
};

// A session is its own process, so the channel is the process's.
CallbackChannel& callback_channel();

// In the process forked for a join: hands the client's connection to the
// session whose channel `name` is, with the secret the client sent. The
// session answers the client itself.
bool hand_over(Socket& client, const std::string& name, const std::string& secret,
               std::string* error);

}  // namespace scuda::server
