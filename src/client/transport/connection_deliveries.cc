// Replies read later (connection.h): the deliveries a connection owes
// into host buffers or to handlers, in request order, and the read turn
// that lets one thread at a time read them off the socket.
#include <algorithm>
#include <mutex>
#include <vector>

#include "client/transport/connection.h"
#include "protocol/frame.h"

namespace scuda::client {

void Connection::deliver_later(uint64_t id, void* dst, size_t size) {
  deliver_later(id, dst, size, HostLayout::contiguous(size));
}

void Connection::deliver_later(uint64_t id, void* dst, size_t size, const HostLayout& layout) {
  std::lock_guard lock(turn_mu_);
  deliveries_.push_back({id, dst, size, layout, nullptr});
}

void Connection::handle_later(uint64_t id, ReplyHandler handle) {
  std::lock_guard lock(turn_mu_);
  deliveries_.push_back({id, nullptr, 0, HostLayout::contiguous(0), std::move(handle)});
}

CUresult Connection::settle(uint64_t id) {
  auto owed = [&] {
    std::lock_guard lock(turn_mu_);
    return std::any_of(deliveries_.begin(), deliveries_.end(),
                       [&](const Delivery& d) { return d.id == id; });
  };
  if (!owed()) return CUDA_SUCCESS;
  awaited_.fetch_add(1, std::memory_order_relaxed);
  ReadTurn turn(*this);
  if (CUresult rc = deliver_before(id + 1, id); broken_) return rc;
  return CUDA_SUCCESS;
}

CUresult Connection::settle_all() {
  uint64_t last = 0;
  {
    std::lock_guard lock(turn_mu_);
    if (deliveries_.empty()) return CUDA_SUCCESS;
    last = deliveries_.back().id;
  }
  return settle(last);
}

CUresult Connection::take_deferred_error() { return deferred_error_.exchange(CUDA_SUCCESS); }

Connection::ReadTurn::ReadTurn(Connection& c, uint64_t ahead_of) : c_(c) {
  std::unique_lock lock(c_.turn_mu_);
  auto settled = [&] { return ahead_of && !c_.owes_before(ahead_of); };
  c_.turn_cv_.wait(lock, [&] { return !c_.reading_ || settled(); });
  held_ = !settled();
  if (held_) c_.reading_ = true;
}

Connection::ReadTurn::~ReadTurn() {
  if (!held_) return;
  {
    std::lock_guard lock(c_.turn_mu_);
    c_.reading_ = false;
  }
  c_.turn_cv_.notify_all();
}

bool Connection::owes_before(uint64_t id) const {
  return !deliveries_.empty() && deliveries_.front().id < id;
}

CUresult Connection::deliver_before(uint64_t id, uint64_t awaited) {
  for (;;) {
    Delivery d;
    {
      std::lock_guard lock(turn_mu_);
      if (!owes_before(id)) break;
      d = deliveries_.front();
    }
    awaiting_ = d.id == awaited;
    const CUresult rc = read_delivery(d);
    {
      std::lock_guard lock(turn_mu_);
      deliveries_.pop_front();
    }
    turn_cv_.notify_all();
    if (broken_) return rc;
    CUresult none = CUDA_SUCCESS;
    deferred_error_.compare_exchange_strong(none, rc);
  }
  awaiting_ = true;
  return CUDA_SUCCESS;
}

// Whoever reads replies now reads these on the way to its own, which comes
// after them, or finishes with a reply from before them: either way the
// wait ends without this thread taking the connection's lock.
void Connection::deliver_ahead_of(uint64_t id) {
  ReadTurn turn(*this, id);
  if (turn.held()) deliver_before(id);
}

CUresult Connection::read_delivery(const Delivery& d) {
  if (!d.handle) return read_into(d.id, d.dst, d.size, d.layout);
  std::vector<uint8_t> payload;
  const CUresult rc = read_reply(d.id, &payload);
  if (broken_) return rc;
  protocol::Reader r(payload);
  return d.handle(rc, r);
}

}  // namespace scuda::client
