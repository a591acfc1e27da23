// The accepting process: it never touches CUDA; each accepted client gets a
// forked session process of its own, which exits when the client goes away.
#pragma once

#include <string>

#include "server/session.h"

namespace scuda::server {

struct ListenerOptions {
  std::string listen = "127.0.0.1:14833";
  int max_sessions = 0;  // 0: no limit
  SessionOptions session;
};

// Serves until killed; returns an exit code if it cannot start.
int serve(const ListenerOptions& options);

}  // namespace scuda::server
