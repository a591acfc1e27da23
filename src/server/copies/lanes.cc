#include "server/copies/lanes.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "protocol/ops.h"
#include "server/copies/piece_events.h"

namespace scuda::server {

namespace {

// Waits until `fd` is ready for `events`, or until the client has closed
// its connection (`main`) and `fd` is not ready: a client that stops moving
// a copy's stripes must not hold its session forever.
bool ready(int fd, short events, int main) {
  for (;;) {
    pollfd fds[2] = {{fd, events, 0}, {main, POLLRDHUP, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (fds[0].revents) return true;  // an error or hang-up then fails the read or write
    if (fds[1].revents) return false;
  }
}

// Moves all `n` bytes, or fails. It waits in ready() only when the socket
// has nothing to give or no room, so that bytes in flow cost one system
// call per read or write, as they do on the client.
bool move_all(Socket& s, uint8_t* p, size_t n, bool sending, int main) {
  while (n) {
    short wait = 0;
    const ssize_t moved = sending ? s.write_now(p, n, &wait) : s.read_now(p, n, &wait);
    if (moved > 0) {
      p += moved;
      n -= static_cast<size_t>(moved);
      continue;
    }
    const bool failed = moved == 0 || (errno != EAGAIN && errno != EINTR);
    if (failed || (errno == EAGAIN && !ready(s.fd(), wait, main))) return false;
  }
  // What TLS gathered must reach the client before the copy counts as sent.
  for (short wait = 0; sending && s.flush_now(&wait) != 0;)
    if (errno != EAGAIN || !ready(s.fd(), wait, main)) return false;
  return true;
}

}  // namespace

struct Lanes::Lane {
  Lane(const DriverTable& d, Socket s) : socket(std::move(s)), staging(d) {}
  Socket socket;
  Staging staging;
};

Lanes::Lanes(const DriverTable& d, int main) : d_(d), main_(main) {}
Lanes::~Lanes() = default;

bool Lanes::open(uint32_t wanted, std::string* name, std::string* secret, std::string* error) {
  {
    std::lock_guard lock(mu_);
    if (!crew_) {
      lanes_.resize(wanted);
      crew_ = std::make_unique<FanOut>(wanted, [this](size_t i) { part(i); });
    }
  }
  return join_.open(
      "lanes", [this](Socket client) { return take(std::move(client)); }, name, secret, error);
}

uint32_t Lanes::count() {
  std::lock_guard lock(mu_);
  return lost_ ? 0 : joined_;
}

// A lane counts before its join is answered, so that the client's first
// copy over it finds it.
bool Lanes::take(Socket client) {
  std::lock_guard lock(mu_);
  auto& lane = lanes_[joined_++];
  lane = std::make_unique<Lane>(d_, std::move(client));
  if (!acknowledge_join(lane->socket)) lost_ = true;
  spdlog::info("lane {} of {} joined", joined_, lanes_.size());
  return joined_ == lanes_.size();
}

CUresult Lanes::run(const Copy& copy) {
  copy_ = copy;
  {
    std::lock_guard lock(mu_);
    result_ = CUDA_SUCCESS;
  }
  crew_->run(copy.lanes);
  std::lock_guard lock(mu_);
  return lost_ ? CUDA_ERROR_DEVICE_UNAVAILABLE : result_;
}

void Lanes::part(size_t index) {
  if (d_.cuCtxSetCurrent) d_.cuCtxSetCurrent(copy_.context);
  CUresult rc = copy_.refused;
  Lane& lane = *lanes_[index];
  const bool kept = copy_.to_device ? to_device(lane, index, &rc) : to_host(lane, index, &rc);
  finish(kept, rc);
}

// A lost lane closes them all, which ends the waits of the others, here
// and on the client, on bytes that will never come.
void Lanes::finish(bool kept, CUresult rc) {
  std::lock_guard lock(mu_);
  if (!kept && !lost_) {
    lost_ = true;
    spdlog::error("a lane was lost; copies can no longer use lanes");
    for (uint32_t i = 0; i < joined_; ++i) shutdown(lanes_[i]->socket.fd(), SHUT_RDWR);
  }
  if (result_ == CUDA_SUCCESS) result_ = rc;
}

// The stripe's pieces are read into a staging half, and each piece's copy
// queued as soon as it is in; the next stripe takes the other half.
bool Lanes::to_device(Lane& lane, size_t index, CUresult* rc) {
  const Copy& c = copy_;
  return protocol::each_stripe(index, c.lanes, c.size, [&](uint64_t at, size_t n) {
    uint8_t* buf = lane.staging.next_half();
    if (!buf) return false;
    for (size_t p = 0; p < n; p += kPiece) {
      const size_t m = std::min(kPiece, n - p);
      if (!move_all(lane.socket, buf + p, m, false, main_)) return false;
      if (*rc == CUDA_SUCCESS)
        *rc = d_.cuMemcpyHtoDAsync_v2(c.device + at + p, buf + p, m, c.stream);
    }
    lane.staging.released(c.stream, false);
    return true;
  });
}

// Each stripe's pieces are copied into staging, and each piece sent as soon
// as its copy is done. A piece that could not be copied is sent as zeros.
bool Lanes::to_host(Lane& lane, size_t index, CUresult* rc) {
  const Copy& c = copy_;
  return protocol::each_stripe(index, c.lanes, c.size, [&](uint64_t at, size_t n) {
    uint8_t* buf = lane.staging.get();
    if (!buf) return false;
    PieceEvents events(d_);
    CUresult copied = *rc;
    if (copied == CUDA_SUCCESS)
      copied = queue_pieces(d_, events, d_.cuMemcpyDtoHAsync_v2, buf, c.device + at, n, c.stream);
    if (copied != CUDA_SUCCESS) std::memset(buf, 0, n);
    for (size_t i = 0, p = 0; p < n; ++i, p += kPiece) {
      const size_t m = std::min(kPiece, n - p);
      if (i && copied == CUDA_SUCCESS) copied = wait_or_zero(events, i, buf + p, m);
      else if (i) std::memset(buf + p, 0, m);
      if (!move_all(lane.socket, buf + p, m, true, main_)) return false;
    }
    if (*rc == CUDA_SUCCESS) *rc = copied;
    return true;
  });
}

}  // namespace scuda::server
