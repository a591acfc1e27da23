// A write to a server that is gone raises SIGPIPE, which ends a program
// that keeps the signal's default disposition. The client writes from the
// program's own threads, whose signal mask is the program's, so it blocks
// SIGPIPE for the length of a write and takes back one the write raised:
// the write fails with EPIPE instead, and the program learns of the lost
// server from the call's result. (Threads of the client's own block it
// once, for good: block_sigpipe.)
#pragma once

#include <pthread.h>
#include <signal.h>

#include <ctime>

namespace scuda::client {

inline sigset_t sigpipe_only() {
  sigset_t pipe;
  sigemptyset(&pipe);
  sigaddset(&pipe, SIGPIPE);
  return pipe;
}

// For a thread of the client's own, at its start.
inline void block_sigpipe() {
  const sigset_t pipe = sigpipe_only();
  pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
}

// Runs `write` (returning true on success) with SIGPIPE blocked.
template <class Write>
bool without_sigpipe(Write&& write) {
  const sigset_t pipe = sigpipe_only();
  sigset_t old;
  pthread_sigmask(SIG_BLOCK, &pipe, &old);
  const bool ok = write();
  // A SIGPIPE pending now was raised by the write: one pending before it
  // would have been delivered, unless the thread blocked it itself.
  if (!ok && !sigismember(&old, SIGPIPE)) {
    const timespec now{};
    sigtimedwait(&pipe, nullptr, &now);
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

}  // namespace scuda::client
