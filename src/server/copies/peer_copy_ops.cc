// Copies between the sessions of two servers (peer_copies.h): the client
// asks the session the bytes go to for its inbox, then that session to
// receive a copy and the other to send it, both in their places among
// their sessions' requests.
#include <spdlog/spdlog.h>

#include "protocol/ops.h"
#include "server/copies/peer_copies.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"
#include "server/session/typed_handler.h"

namespace scuda::server {

namespace {

namespace op = protocol::op;

// How long a receiving session waits for the sending one to connect.
constexpr std::chrono::seconds kArrivalLimit(10);

// A server started with --no-peer-copies refuses both ends of a copy; a
// client asks each end's inbox before its first direct copy between them,
// so that a refusing source costs it no wait on the receiving end.
CUresult refused(const char* what) {
  spdlog::warn("{} refused: this server runs with --no-peer-copies; the client stages the copy",
               what);
  return CUDA_ERROR_NOT_SUPPORTED;
}

// The join point the sending session's join names.
CUresult peer_inbox(Session& s, const protocol::Empty&, op::JoinPoint* a) {
  if (!s.peer_copies()) return refused("a copy from another server");
  std::string name, secret, error;
  if (!s.peers().open(&name, &secret, &error)) {
    spdlog::error("cannot open the inbox for copies from other servers: {}", error);
    return CUDA_ERROR_OPERATING_SYSTEM;
  }
  *a = {name, secret};
  return CUDA_SUCCESS;
}

// Synchronous: the bytes are read from the device in the current context,
// after the work queued before.
CUresult peer_send(Session& s, const op::PeerSend::Request& q, protocol::Empty*) {
  if (!s.peer_copies()) return refused("a copy to another server");
  const uint64_t src = q.src, size = q.size, id = q.id;
  const PeerAddress to{q.address, q.token, q.inbox.name, q.inbox.secret, q.certificate};
  if (src + size < src) return CUDA_ERROR_INVALID_VALUE;
  std::string why;
  const CUresult rc = send_to_peer(s.driver(), s.peers(), src, size, id, to, &why);
  if (!why.empty()) spdlog::warn("copy {:#x} to another server's session failed: {}", id, why);
  return rc;
}

// Waits for the sending session's stripes, then writes their bytes to the
// device in the current context.
CUresult peer_receive(Session& s, const op::PeerReceive::Request& q, protocol::Empty*) {
  const uint64_t dst = q.dst, size = q.size, id = q.id;
  if (dst + size < dst) return CUDA_ERROR_INVALID_VALUE;
  std::vector<Socket> stripes = s.peers().take_stripes(id, size, kArrivalLimit);
  if (stripes.empty()) {
    spdlog::warn("copy {:#x} from another server's session did not come whole", id);
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  return receive_from_peer(s.driver(), s.peers(), stripes, dst, size);
}

const HandlerEntry kHandlers[] = {
    typed_entry<op::PeerInbox, peer_inbox>(),
    typed_entry<op::PeerSend, peer_send>(),
    typed_entry<op::PeerReceive, peer_receive>(),
};

}  // namespace

std::span<const HandlerEntry> peer_copy_handlers() { return kHandlers; }

}  // namespace scuda::server
