// The live mirrors' channel (docs/managed-memory.md, "Live mirrors"): a
// connection of the client's own, joined through the session's join point,
// on which a thread of the session answers each turn of the client's words
// with the words the device changed in the live mirrors since the last. It
// never waits for the session's request thread, which may be waiting for
// a kernel that waits for these very words.
#pragma once

#include <string>

#include "common/socket.h"
#include "server/memory/host_mirrors.h"
#include "server/session/join_point.h"

namespace scuda::server {

class LiveChannel {
 public:
  // Starts waiting for the client to join, the first time; says the join
  // point's name and secret. Turns read and write `mirrors`.
  bool open(HostMirrors* mirrors, std::string* name, std::string* secret, std::string* error);

 private:
  bool take(Socket client);
  void serve(Socket client);

  JoinPoint join_;
  HostMirrors* mirrors_ = nullptr;
};

// A session is its own process, so the channel is the process's.
LiveChannel& live_channel();

}  // namespace scuda::server
