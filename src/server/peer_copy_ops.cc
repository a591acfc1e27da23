// Copies between the sessions of two servers (peer_copies.h): the client
// asks the session the bytes go to for its inbox, then that session to
// receive a copy and the other to send it, both in their places among
// their sessions' requests.
#include <spdlog/spdlog.h>

#include "protocol/ops.h"
#include "server/dispatch.h"
#include "server/peer_copies.h"
#include "server/session.h"

namespace scuda::server {

namespace {

using protocol::Reader;
using protocol::Writer;

// How long a receiving session waits for the sending one to connect.
constexpr std::chrono::seconds kArrivalLimit(10);

// -> string name, string secret: what the sending session's join carries.
CUresult peer_inbox(Session& s, Reader& in, Writer& out) {
  if (!in.done()) return kMalformed;
  std::string name, secret, error;
  if (!s.peers().open(&name, &secret, &error)) {
    spdlog::error("cannot open the inbox for copies from other servers: {}", error);
    return CUDA_ERROR_OPERATING_SYSTEM;
  }
  out.str(name);
  out.str(secret);
  return CUDA_SUCCESS;
}

// u64 src, u64 size, u64 copy id, string address, string token, string
// name, string secret. Synchronous: the bytes are read from the device in
// the current context, after the work queued before.
CUresult peer_send(Session& s, Reader& in, Writer&) {
  const uint64_t src = in.u64(), size = in.u64(), id = in.u64();
  PeerAddress to;
  to.address = in.str();
  to.token = in.str();
  to.name = in.str();
  to.secret = in.str();
  if (!in.done()) return kMalformed;
  if (src + size < src) return CUDA_ERROR_INVALID_VALUE;
  std::string why;
  const CUresult rc = send_to_peer(s.driver(), s.staging(), src, size, id, to, &why);
  if (!why.empty()) spdlog::warn("copy {:#x} to another server's session failed: {}", id, why);
  return rc;
}

// u64 dst, u64 size, u64 copy id: waits for the sending session, then
// writes its bytes to the device in the current context.
CUresult peer_receive(Session& s, Reader& in, Writer&) {
  const uint64_t dst = in.u64(), size = in.u64(), id = in.u64();
  if (!in.done()) return kMalformed;
  if (dst + size < dst) return CUDA_ERROR_INVALID_VALUE;
  Socket peer = s.peers().take_copy(id, size, kArrivalLimit);
  if (!peer.valid()) {
    spdlog::warn("copy {:#x} from another server's session did not come", id);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  return receive_from_peer(s.driver(), s.staging(), peer, dst, size);
}

const HandlerEntry kHandlers[] = {
    {protocol::kOpPeerInbox, peer_inbox},
    {protocol::kOpPeerSend, peer_send},
    {protocol::kOpPeerReceive, peer_receive},
};

}  // namespace

std::span<const HandlerEntry> peer_copy_handlers() { return kHandlers; }

}  // namespace scuda::server
