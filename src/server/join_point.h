// A session's door for more connections from its own client
// (docs/protocol.md, "Joining a session"): the callback channel and the
// lanes. The client joins through the listener, on the port it already
// uses: the process forked for the join hands the connection over a local
// socket that the session named (hand_over); the session admits it when
// the secret it gave out comes with it.
#pragma once

#include <functional>
#include <mutex>
#include <string>

#include "common/socket.h"

namespace scuda::server {

class JoinPoint {
 public:
  // Takes an admitted connection, which it must answer (acknowledge_join);
  // true once no more joins are wanted.
  using Take = std::function<bool(Socket)>;

  // Starts waiting for joins the first time, under a new name that says
  // `what` they are for; says the name and the secret that a join must carry.
  bool open(const char* what, Take take, std::string* name, std::string* secret,
            std::string* error);

 private:
  void accept_joins(Socket listener);
  // The connection a join handed over, when its secret is right.
  Socket admit(Socket& peer);

  std::mutex mu_;
  std::string what_;
  std::string name_;
  std::string secret_;
  Take take_;
};

// Tells a joined client that the session has it.
bool acknowledge_join(Socket& client);

// In the process forked for a join: hands the client's connection to the
// session whose join point `name` is, with the secret the client sent. The
// session answers the client itself.
bool hand_over(Socket& client, const std::string& name, const std::string& secret,
               std::string* error);

}  // namespace scuda::server
