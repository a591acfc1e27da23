#include "server/session/heartbeat.h"

#include <pthread.h>
#include <signal.h>

#include <thread>

#include "protocol/frame.h"

namespace scuda::server {

void Heartbeat::start(Socket& socket, std::chrono::milliseconds period) {
  socket_ = &socket;
  period_ = period;
  // The thread takes none of the session's signals; it ends with the process.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  std::thread([this] { beat(); }).detach();
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

void Heartbeat::enter() {
  std::lock_guard lock(mu_);
  serving_ = true;
  replying_ = false;
}

void Heartbeat::begin_reply() {
  std::lock_guard lock(mu_);
  replying_ = true;
}

void Heartbeat::leave() {
  std::lock_guard lock(mu_);
  serving_ = false;
}

// An output frame of no bytes, written whole under mu_, so that it never
// splits one of the session's (which are not written while it may beat).
void Heartbeat::beat() {
  protocol::FrameHeader h;
  h.flags = protocol::kOutput;
  uint8_t frame[protocol::kHeaderSize];
  protocol::encode_header(h, frame);
  for (;;) {
    std::this_thread::sleep_for(period_ / 2);
    std::lock_guard lock(mu_);
    const auto now = std::chrono::steady_clock::now();
    if (!serving_ || replying_ || now - last_ < period_) continue;
    if (!socket_->write_all(frame, sizeof frame)) return;
    last_ = now;
  }
}

}  // namespace scuda::server
