#include "server/peer_copies.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>

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

struct CopyHeader {
  uint64_t id;
  uint64_t size;
};

// Writes to the other session time out too (reads do, by the idle limit):
// one that stopped reading ends the copy, not the session.
void limit_writes(Socket& s) {
  const timeval limit{static_cast<time_t>(kPeerLimit.count() / 1000), 0};
  setsockopt(s.fd(), SOL_SOCKET, SO_SNDTIMEO, &limit, sizeof limit);
}

// Dials `to` as a join of its inbox, over plain TCP (the client does not
// ask for a copy between servers it reaches over TLS).
Socket dial(const PeerAddress& to, std::string* why) {
  HostPort hp;
  if (!parse_host_port(to.address, &hp, why)) return Socket();
  Socket s = connect_tcp(hp, why, kPeerLimit);
  if (!s.valid()) return s;
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
  s.set_idle_limit(kPeerLimit);
  limit_writes(s);
  protocol::Frame reply;
  std::string read_why;
  if (!protocol::write_join_route(s, to.name) ||
      !protocol::write_frame(s, h, w.data().data(), w.size()) ||
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

}  // namespace

bool PeerInbox::open(std::string* name, std::string* secret, std::string* error) {
  return join_.open(
      "peer copies", [this](Socket peer) { return take(std::move(peer)); }, name, secret, error);
}

// Any number of copies come over time, each on its own connection: the
// inbox never stops taking them.
bool PeerInbox::take(Socket peer) {
  if (!acknowledge_join(peer)) return false;
  std::lock_guard lock(mu_);
  arrived_.push_back(std::move(peer));
  cv_.notify_all();
  return false;
}

Socket PeerInbox::take_copy(uint64_t id, uint64_t size, milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    Socket peer;
    {
      std::unique_lock lock(mu_);
      if (!cv_.wait_until(lock, deadline, [&] { return !arrived_.empty(); })) return Socket();
      peer = std::move(arrived_.front());
      arrived_.pop_front();
    }
    peer.set_idle_limit(kPeerLimit);
    limit_writes(peer);
    CopyHeader h{};
    if (peer.read_exact(&h, sizeof h) && h.id == id && h.size == size) return peer;
    spdlog::warn("a peer connection brought copy {:#x} of {} bytes, not {:#x} of {}: closed", h.id,
                 h.size, id, size);
  }
}

CUresult send_to_peer(const DriverTable& d, Staging& stage, CUdeviceptr src, uint64_t size,
                      uint64_t id, const PeerAddress& to, std::string* why) {
  uint8_t* buffer = stage.get();
  if (!buffer) return CUDA_ERROR_OUT_OF_MEMORY;
  Socket s = dial(to, why);
  if (!s.valid()) return CUDA_ERROR_NOT_SUPPORTED;
  const CopyHeader h{id, size};
  if (!s.write_all(&h, sizeof h)) return CUDA_ERROR_NOT_SUPPORTED;
  for (uint64_t at = 0; at < size;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(protocol::kChunkSize, size - at));
    // A read that fails ends the connection: the inbox's side fails with it.
    if (const CUresult rc = d.cuMemcpyDtoH_v2(buffer, src + at, n); rc != CUDA_SUCCESS) return rc;
    if (!s.write_all(buffer, n)) {
      *why = fmt::format("the connection to {} broke", to.address);
      return CUDA_ERROR_NOT_SUPPORTED;
    }
    at += n;
  }
  uint32_t result = CUDA_ERROR_UNKNOWN;
  if (!s.read_exact(&result, sizeof result)) {
    *why = fmt::format("{} did not say how the copy ended", to.address);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  return static_cast<CUresult>(result);
}

CUresult receive_from_peer(const DriverTable& d, Staging& stage, Socket& peer, CUdeviceptr dst,
                           uint64_t size) {
  uint8_t* buffer = stage.get();
  CUresult rc = buffer ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
  uint8_t drain[4096];
  for (uint64_t at = 0; at < size;) {
    const size_t n = static_cast<size_t>(
        std::min<uint64_t>(buffer ? protocol::kChunkSize : sizeof drain, size - at));
    if (!peer.read_exact(buffer ? buffer : drain, n)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
    if (rc == CUDA_SUCCESS) rc = d.cuMemcpyHtoD_v2(dst + at, buffer, n);
    at += n;
  }
  const uint32_t result = rc;
  peer.write_all(&result, sizeof result);
  return rc;
}

}  // namespace scuda::server
