#include "server/lanes.h"

#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include <spdlog/spdlog.h>

#include "protocol/ops.h"
#include "server/piece_events.h"

namespace scuda::server {

using protocol::kLaneStripe;

struct Lanes::Lane {
  Lane(const DriverTable& d, Socket s) : socket(std::move(s)), staging(d) {}
  Socket socket;
  Staging staging;
};

Lanes::Lanes(const DriverTable& d) : d_(d) {}
Lanes::~Lanes() = default;

bool Lanes::open(uint32_t wanted, std::string* name, std::string* secret, std::string* error) {
  {
    std::lock_guard lock(mu_);
    if (!wanted_) wanted_ = wanted;
  }
  return join_.open("lanes", [this](Socket client) { return take(std::move(client)); }, name,
                    secret, error);
}

uint32_t Lanes::count() {
  std::lock_guard lock(mu_);
  return lost_ ? 0 : static_cast<uint32_t>(lanes_.size());
}

// A lane counts before its join is answered, so that the client's first
// copy over it finds it.
bool Lanes::take(Socket client) {
  std::lock_guard lock(mu_);
  auto lane = std::make_unique<Lane>(d_, std::move(client));
  const auto index = static_cast<uint32_t>(lanes_.size());
  std::thread([this, l = lane.get(), index, seen = generation_] { serve(*l, index, seen); }).detach();
  lanes_.push_back(std::move(lane));
  if (!acknowledge_join(lanes_.back()->socket)) lost_ = true;
  spdlog::info("lane {} of {} joined", index + 1, wanted_);
  return lanes_.size() >= wanted_;
}

CUresult Lanes::run(const Copy& copy) {
  std::unique_lock lock(mu_);
  copy_ = copy;
  ++generation_;
  busy_ = copy.lanes;
  result_ = CUDA_SUCCESS;
  cv_.notify_all();
  cv_.wait(lock, [&] { return busy_ == 0; });
  return lost_ ? CUDA_ERROR_DEVICE_UNAVAILABLE : result_;
}

void Lanes::serve(Lane& lane, uint32_t index, uint64_t seen) {
  for (;;) {
    Copy c;
    {
      std::unique_lock lock(mu_);
      cv_.wait(lock, [&] { return generation_ != seen; });
      seen = generation_;
      c = copy_;
    }
    if (index >= c.lanes) continue;
    if (d_.cuCtxSetCurrent) d_.cuCtxSetCurrent(c.context);
    CUresult rc = c.refused;
    const bool kept = c.to_device ? to_device(lane, index, c, &rc) : to_host(lane, index, c, &rc);
    finish(kept, rc);
  }
}

// A lost lane closes them all, which ends the waits of the others, here
// and on the client, on bytes that will never come.
void Lanes::finish(bool kept, CUresult rc) {
  std::lock_guard lock(mu_);
  if (!kept && !lost_) {
    lost_ = true;
    spdlog::error("a lane was lost; copies can no longer use lanes");
    for (auto& lane : lanes_) shutdown(lane->socket.fd(), SHUT_RDWR);
  }
  if (result_ == CUDA_SUCCESS) result_ = rc;
  if (--busy_ == 0) cv_.notify_all();
}

// The stripe's pieces are read into a staging half, and each piece's copy
// queued as soon as it is in; the next stripe takes the other half.
bool Lanes::to_device(Lane& lane, uint32_t index, const Copy& c, CUresult* rc) {
  for (uint64_t at = index * kLaneStripe; at < c.size; at += c.lanes * kLaneStripe) {
    const size_t n = std::min<uint64_t>(kLaneStripe, c.size - at);
    uint8_t* buf = lane.staging.next_half();
    if (!buf) return false;
    for (size_t p = 0; p < n; p += kPiece) {
      const size_t m = std::min(kPiece, n - p);
      if (!lane.socket.read_exact(buf + p, m)) return false;
      if (*rc == CUDA_SUCCESS) *rc = d_.cuMemcpyHtoDAsync_v2(c.device + at + p, buf + p, m, c.stream);
    }
    lane.staging.released(c.stream, false);
  }
  return true;
}

// Each stripe's pieces are copied into staging, and each piece sent as soon
// as its copy is done. A piece that could not be copied is sent as zeros.
bool Lanes::to_host(Lane& lane, uint32_t index, const Copy& c, CUresult* rc) {
  for (uint64_t at = index * kLaneStripe; at < c.size; at += c.lanes * kLaneStripe) {
    const size_t n = std::min<uint64_t>(kLaneStripe, c.size - at);
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
      if (!lane.socket.write_all(buf + p, m)) return false;
    }
    if (*rc == CUDA_SUCCESS) *rc = copied;
  }
  return true;
}

}  // namespace scuda::server
