// The accepting process: it never touches CUDA; each accepted client gets a
// forked session process of its own, which exits when the client goes away.
#pragma once

#include <chrono>
#include <string>

#include "server/session/session.h"

namespace scuda::server {

struct ListenerOptions {
  std::string listen = "127.0.0.1:14833";
  int max_sessions = 0;  // 0: no limit; past it, clients wait in the admission queue
  // The tokens file (`--tokens`), read again at SIGHUP; empty: the tokens in
  // `session` stay as they are.
  std::string tokens_file;
  // After SIGTERM or SIGINT: how long running sessions may go on before
  // they are ended (a second signal ends them at once).
  std::chrono::seconds drain_timeout{30};
  // HOST:PORT to serve Prometheus metrics on over HTTP; empty: none.
  std::string metrics;
  // NVML for the GPU monitor's figures (`--nvml`); empty: the usual places.
  std::string nvml_path;
  SessionOptions session;
};

// Serves until SIGTERM or SIGINT, then stops accepting, lets the running
// sessions finish (drain_timeout) and returns 0; returns another exit code
// if it cannot start. SIGHUP reads the tokens file again.
int serve(const ListenerOptions& options);

}  // namespace scuda::server
