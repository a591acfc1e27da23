#include "server/copies/peer_copies.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cerrno>
#include <new>
#include <thread>

#include "common/tls.h"
#include "protocol/codec.h"
#include "protocol/frame.h"
#include "protocol/frame_io.h"
#include "protocol/handshake.h"
#include "protocol/ops.h"

namespace scuda::server {

namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// How long a connect, a handshake, or a wait for the other side's bytes
// may take before the copy fails (and the client stages it instead).
constexpr milliseconds kPeerLimit = seconds(10);

// Each stripe's bytes go through its buffer in pieces of this size.
constexpr size_t kPeerChunk = 4u << 20;

// What one stripe's side of a copy came to.
struct StripeEnd {
  CUresult rc = CUDA_SUCCESS;
  std::string why;  // for the log, when the other session could not be reached
};

// Reads and writes with the other session time out, over TLS as over
// plain TCP: one that stopped reading or sending ends the copy, not the
// session.
void limit_waits(Socket& s) {
  s.set_idle_limit(kPeerLimit);
  s.set_write_limit(kPeerLimit);
}

// Dials `to` as a join of its inbox: over TLS when the client reaches that
// server over TLS, which must then show the certificate the client checked.
Socket dial(const PeerAddress& to, std::string* why) {
  HostPort hp;
  if (!parse_host_port(to.address, &hp, why)) return Socket();
  Socket s = connect_tcp(hp, why, kPeerLimit);
  if (!s.valid()) return s;
  if (!protocol::write_join_route(s, to.name)) {
    *why = fmt::format("the connection to {} broke as it joined", to.address);
    return Socket();
  }
  if (!to.certificate.empty() && !tls::connect_pinned(s, to.certificate, kPeerLimit, why)) {
    *why = fmt::format("{}: {}", to.address, *why);
    return Socket();
  }
  protocol::Hello hello;
  hello.api_hash = protocol::kApiHash;
  hello.cuda_version = CUDA_VERSION;
  hello.token = to.token;
  hello.program = "scuda peer copy";
  hello.join = to.name;
  hello.secret = to.secret;
  protocol::Writer w;
  protocol::encode(hello, w);
  protocol::FrameHeader h;
  h.op = protocol::kOpHello;
  limit_waits(s);
  protocol::Frame reply;
  std::string read_why;
  if (!protocol::write_frame(s, h, w.data().data(), w.size()) ||
      protocol::read_frame(s, &reply, &read_why) != protocol::ReadStatus::kOk) {
    *why = fmt::format("the handshake with {} failed{}{}", to.address, read_why.empty() ? "" : ": ",
                       read_why);
    return Socket();
  }
  protocol::Reader r(reply.payload);
  if ((reply.header.flags & protocol::kError) || r.u32() != CUDA_SUCCESS || !r.done()) {
    *why = fmt::format("{} refused the join: {}", to.address,
                       std::string(reply.payload.begin(), reply.payload.end()));
    return Socket();
  }
  return s;
}

// Runs fn(i) for each stripe i, stripe 0 on the calling thread and each
// other on a thread of its own, with the caller's context current, and
// returns the stripes whose thread could not be started. Those do not run
// at all: run after stripe 0 they would wait for the other end, which
// starts no stripe before all have come.
template <typename Fn>
std::vector<uint32_t> for_each_stripe(const DriverTable& d, uint32_t count, Fn fn) {
  CUcontext ctx = nullptr;
  d.cuCtxGetCurrent(&ctx);
  std::vector<std::thread> threads;
  std::vector<uint32_t> not_started;
  threads.reserve(count);
  not_started.reserve(count);
  for (uint32_t i = 1; i < count; ++i) {
    try {
      threads.emplace_back([&d, ctx, fn, i] {
        d.cuCtxSetCurrent(ctx);
        fn(i);
      });
    } catch (...) {
      not_started.push_back(i);
    }
  }
  fn(0);
  for (std::thread& t : threads) t.join();
  return not_started;
}

// The stripes that for_each_stripe could not start fail the copy.
void fail_not_started(const std::vector<uint32_t>& stripes, std::vector<StripeEnd>* ends) {
  for (uint32_t i : stripes) (*ends)[i] = {CUDA_ERROR_NOT_SUPPORTED, "no thread for a stripe"};
}

// The first failure among the stripes, in stripe order.
StripeEnd first_failure(const std::vector<StripeEnd>& ends) {
  for (const StripeEnd& end : ends)
    if (end.rc != CUDA_SUCCESS) return end;
  return {};
}

// The key a destination's kept connections go by: everything the join
// checked (the address, the inbox and its secret, the token, the pinned
// certificate), so that a connection serves only a copy that would have
// been let in on it.
std::string destination_of(const PeerAddress& to) {
  return fmt::format("{}\n{}\n{}\n{}\n{}", to.address, to.name, to.secret, to.token,
                     to.certificate);
}

// A connection for a stripe to `to` with its header sent: a kept one, or,
// when there is none or the other end closed the kept one before the header
// crossed, a new one.
Socket open_stripe(PeerCopies& peers, const PeerCopyHeader& header, const PeerAddress& to,
                   std::string* why) {
  if (Socket s = peers.kept(destination_of(to)); s.valid() && s.write_all(&header, sizeof header))
    return s;
  Socket s = dial(to, why);
  if (s.valid() && !s.write_all(&header, sizeof header)) {
    *why = fmt::format("the connection to {} broke before the copy", to.address);
    return Socket();
  }
  return s;
}

StripeEnd send_stripe(const DriverTable& d, PeerCopies& peers, uint8_t* buffer, CUdeviceptr src,
                      uint64_t length, const PeerCopyHeader& header, const PeerAddress& to) {
  std::string why;
  Socket s = open_stripe(peers, header, to, &why);
  if (!s.valid()) return {CUDA_ERROR_NOT_SUPPORTED, why};
  for (uint64_t at = 0; at < length;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kPeerChunk, length - at));
    // A read that fails ends the connection: the inbox's side fails with it.
    if (const CUresult rc = d.cuMemcpyDtoH_v2(buffer, src + at, n); rc != CUDA_SUCCESS)
      return {rc, ""};
    if (!s.write_all(buffer, n))
      return {CUDA_ERROR_NOT_SUPPORTED, fmt::format("the connection to {} broke", to.address)};
    at += n;
  }
  uint32_t result = CUDA_ERROR_UNKNOWN;
  if (!s.read_exact(&result, sizeof result))
    return {CUDA_ERROR_NOT_SUPPORTED, fmt::format("{} did not say how the copy ended", to.address)};
  if (result == CUDA_SUCCESS) peers.keep(destination_of(to), std::move(s));
  return {static_cast<CUresult>(result), ""};
}

StripeEnd receive_stripe(const DriverTable& d, PeerCopies& peers, uint8_t* buffer, Socket& peer,
                         CUdeviceptr dst, uint64_t length) {
  CUresult rc = buffer ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
  uint8_t drain[4096];
  for (uint64_t at = 0; at < length;) {
    const size_t n =
        static_cast<size_t>(std::min<uint64_t>(buffer ? kPeerChunk : sizeof drain, length - at));
    if (!peer.read_exact(buffer ? buffer : drain, n)) return {CUDA_ERROR_DEVICE_UNAVAILABLE, ""};
    if (rc == CUDA_SUCCESS) rc = d.cuMemcpyHtoD_v2(dst + at, buffer, n);
    at += n;
  }
  // A copy from pageable memory may return before its bytes reach the
  // device; the copy is done only once they have.
  if (rc == CUDA_SUCCESS) rc = d.cuStreamSynchronize(nullptr);
  const uint32_t result = rc;
  if (peer.write_all(&result, sizeof result) && rc == CUDA_SUCCESS)
    peers.await_next(std::move(peer));
  return {rc, ""};
}

}  // namespace

Stripes stripes_of(uint64_t size) {
  const uint64_t wanted = size / kPeerMinStripe + (size % kPeerMinStripe != 0);
  Stripes plan;
  plan.count = static_cast<uint32_t>(std::clamp<uint64_t>(wanted, 1, kPeerStreams));
  plan.length = (size + plan.count - 1) / plan.count;
  return plan;
}

bool PeerCopies::open(std::string* name, std::string* secret, std::string* error) {
  return join_.open(
      "peer copies", [this](Socket peer) { return take(std::move(peer)); }, name, secret, error);
}

// Any number of copies come over time, each stripe on its own connection:
// the inbox never stops taking them.
bool PeerCopies::take(Socket peer) {
  if (!acknowledge_join(peer)) return false;
  arrived_->add({std::move(peer)});
  return false;
}

void PeerCopies::Arrivals::add(Arrival a) {
  std::lock_guard lock(mu);
  queue.push_back(std::move(a));
  cv.notify_all();
}

// The sending session ends the connection when it ends, which ends the
// thread's wait; a copy that comes finds its header read.
void PeerCopies::await_next(Socket peer) {
  auto wait = [arrived = arrived_](Socket s) {
    Arrival a{std::move(s), true, {}};
    a.socket.set_idle_limit(milliseconds(0));
    if (!a.socket.read_exact(&a.header, sizeof a.header)) return;
    limit_waits(a.socket);
    arrived->add(std::move(a));
  };
  try {
    std::thread(wait, std::move(peer)).detach();
  } catch (...) {
    // No thread: the connection closes, and the next copy dials again.
  }
}

// A kept connection that shows anything to read has been closed by the
// other end (or is out of step with it): it is dropped.
Socket PeerCopies::kept(const std::string& destination) {
  std::lock_guard lock(kept_mu_);
  auto it = kept_.find(destination);
  while (it != kept_.end() && !it->second.empty()) {
    Socket s = std::move(it->second.back());
    it->second.pop_back();
    uint8_t byte = 0;
    short wait = 0;
    if (s.read_now(&byte, 1, &wait) < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return s;
  }
  // A destination whose connections are all gone (its session ended) is
  // forgotten.
  if (it != kept_.end()) kept_.erase(it);
  return Socket();
}

void PeerCopies::keep(const std::string& destination, Socket peer) {
  std::lock_guard lock(kept_mu_);
  std::vector<Socket>& kept = kept_[destination];
  if (kept.size() < kPeerStreams) kept.push_back(std::move(peer));
}

bool PeerCopies::header_of(Arrival& a, std::chrono::steady_clock::time_point deadline) {
  if (a.has_header) return true;
  limit_waits(a.socket);
  // The header may take only what is left of the wait.
  a.socket.set_idle_limit(std::max(
      milliseconds(1),
      std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now())));
  a.has_header = a.socket.read_exact(&a.header, sizeof a.header);
  a.socket.set_idle_limit(kPeerLimit);
  return a.has_header;
}

std::vector<Socket> PeerCopies::take_stripes(uint64_t id, uint64_t size, milliseconds limit) {
  const uint32_t count = stripes_of(size).count;
  const auto deadline = std::chrono::steady_clock::now() + limit;
  std::vector<Socket> stripes(count);
  for (uint32_t have = 0; have < count;) {
    Arrival a;
    {
      std::unique_lock lock(arrived_->mu);
      if (!arrived_->cv.wait_until(lock, deadline, [&] { return !arrived_->queue.empty(); }) ||
          std::chrono::steady_clock::now() >= deadline) {
        // What came for this copy too late, or for none, is closed: a
        // sender's stripe then fails at once rather than at its write limit.
        arrived_->queue.clear();
        return {};
      }
      a = std::move(arrived_->queue.front());
      arrived_->queue.pop_front();
    }
    const PeerCopyHeader& h = a.header;
    if (header_of(a, deadline) && h.id == id && h.size == size && h.stripes == count &&
        h.stripe < count && !stripes[h.stripe].valid()) {
      stripes[h.stripe] = std::move(a.socket);
      ++have;
      continue;
    }
    spdlog::warn(
        "a peer connection brought stripe {} of {} of copy {:#x} of {} bytes, not one of the {} "
        "of copy {:#x} of {}: closed",
        h.stripe, h.stripes, h.id, h.size, count, id, size);
  }
  return stripes;
}

uint8_t* PeerCopies::buffer(uint32_t i) {
  if (i >= kPeerStreams) return nullptr;
  if (!buffers_[i]) buffers_[i].reset(new (std::nothrow) uint8_t[kPeerChunk]);
  return buffers_[i].get();
}

CUresult send_to_peer(const DriverTable& d, PeerCopies& peers, CUdeviceptr src, uint64_t size,
                      uint64_t id, const PeerAddress& to, std::string* why) {
  const Stripes plan = stripes_of(size);
  for (uint32_t i = 0; i < plan.count; ++i)
    if (!peers.buffer(i)) return CUDA_ERROR_OUT_OF_MEMORY;
  std::vector<StripeEnd> ends(plan.count);
  fail_not_started(for_each_stripe(d, plan.count,
                                   [&](uint32_t i) {
                                     const uint64_t offset = i * plan.length;
                                     const PeerCopyHeader header{id, size, i, plan.count};
                                     ends[i] = send_stripe(d, peers, peers.buffer(i), src + offset,
                                                           std::min(plan.length, size - offset),
                                                           header, to);
                                   }),
                   &ends);
  StripeEnd failed = first_failure(ends);
  *why = std::move(failed.why);
  return failed.rc;
}

CUresult receive_from_peer(const DriverTable& d, PeerCopies& peers, std::vector<Socket>& stripes,
                           CUdeviceptr dst, uint64_t size) {
  const Stripes plan = stripes_of(size);
  if (stripes.size() != plan.count) return CUDA_ERROR_INVALID_VALUE;
  std::vector<StripeEnd> ends(plan.count);
  fail_not_started(for_each_stripe(d, plan.count,
                                   [&](uint32_t i) {
                                     const uint64_t offset = i * plan.length;
                                     ends[i] = receive_stripe(d, peers, peers.buffer(i), stripes[i],
                                                              dst + offset,
                                                              std::min(plan.length, size - offset));
                                   }),
                   &ends);
  return first_failure(ends).rc;
}

}  // namespace scuda::server
