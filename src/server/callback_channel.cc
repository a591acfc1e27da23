#include "server/callback_channel.h"

#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "protocol/frame_io.h"
#include "protocol/handshake.h"
#include "protocol/ops.h"
#include "server/local_socket.h"

namespace scuda::server {

namespace {

constexpr char kNamePrefix[] = "scuda-callbacks-";
constexpr size_t kSecretSize = 32;

bool random_bytes(std::string* out, size_t size) {
  out->resize(size);
  for (size_t at = 0; at < size;) {
    const ssize_t n = getrandom(out->data() + at, size - at, 0);
    if (n < 0 && errno != EINTR) return false;
    if (n > 0) at += static_cast<size_t>(n);
  }
  return true;
}

// The session's pid, and random bytes so that no one else can guess it.
bool new_name(std::string* name) {
  std::string nonce;
  if (!random_bytes(&nonce, 16)) return false;
  *name = fmt::format("{}{}-", kNamePrefix, getpid());
  for (unsigned char c : nonce) *name += fmt::format("{:02x}", c);
  return true;
}

bool ack(Socket& client) {
  protocol::FrameHeader h;
  h.flags = protocol::kReply;
  h.op = protocol::kOpHello;
  const uint32_t result = CUDA_SUCCESS;
  return protocol::write_frame(client, h, &result, sizeof result);
}

}  // namespace

bool CallbackChannel::open(std::string* name, std::string* secret, std::string* error) {
  std::lock_guard lock(open_mu_);
  if (name_.empty()) {
    std::string chosen, key;
    if (!new_name(&chosen) || !random_bytes(&key, kSecretSize)) {
      *error = fmt::format("no random bytes for the callback channel: {}", std::strerror(errno));
      return false;
    }
    Socket listener = listen_local(chosen, error);
    if (!listener.valid()) return false;
    name_ = chosen;
    secret_ = key;
    std::thread([this, l = std::move(listener)]() mutable { accept_joins(std::move(l)); }).detach();
  }
  *name = name_;
  *secret = secret_;
  return true;
}

// Refused joins leave the session waiting for the right one; the first
// admitted ends the wait, and the local socket's name with it.
void CallbackChannel::accept_joins(Socket listener) {
  for (;;) {
    Socket peer(accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC));
    if (peer.valid() && admit(peer)) return;
    if (!peer.valid() && errno != EINTR && errno != ECONNABORTED) {
      spdlog::error("the callback channel's local socket failed: {}", std::strerror(errno));
      return;
    }
  }
}

bool CallbackChannel::admit(Socket& peer) {
  if (!peer_is_same_user(peer)) {
    spdlog::warn("a process of another user tried to join this session's callback channel");
    return false;
  }
  std::string secret;
  Socket client = receive_with_fd(peer, kSecretSize, &secret);
  if (!client.valid()) {
    spdlog::warn("a join of the callback channel came without its connection");
    return false;
  }
  if (!protocol::tokens_equal(secret, secret_)) {
    spdlog::warn("refused a callback channel with the wrong secret");
    protocol::write_error(client, 0,
                          "wrong secret for this session's callback channel: a client can only "
                          "join its own session");
    return false;
  }
  std::lock_guard lock(mu_);
  if (!ack(client)) return false;
  socket_ = std::move(client);
  spdlog::info("callback channel joined");
  return true;
}

void CallbackChannel::reached(uint64_t id) {
  std::lock_guard lock(mu_);
  if (!socket_.valid()) return;
  protocol::FrameHeader h;
  h.op = protocol::kOpHostCallback;
  protocol::Writer w;
  w.u64(id);
  if (!protocol::write_frame(socket_, h, w.data().data(), w.size()))
    return lose(true, "the client closed it");
  protocol::Frame f;
  std::string error;
  switch (protocol::read_frame(socket_, &f, &error)) {
    case protocol::ReadStatus::kClosed: return lose(true, "the client closed it");
    case protocol::ReadStatus::kBad: return lose(false, error);
    case protocol::ReadStatus::kOk: break;
  }
  protocol::Reader r(f.payload);
  if (f.header.op != protocol::kOpHostCallback || f.header.flags != protocol::kReply ||
      r.u64() != id || !r.done())
    lose(false, fmt::format("the client did not answer callback {} with its \"done\"", id));
}

void CallbackChannel::lose(bool client_left, const std::string& why) {
  if (client_left)
    spdlog::info("callback channel closed ({}): later host callbacks return at once", why);
  else
    spdlog::warn("callback channel closed: {}; later host callbacks return at once", why);
  socket_.close();
}

CallbackChannel& callback_channel() {
  static CallbackChannel* c = new CallbackChannel;  // never freed: driver threads use it until exit
  return *c;
}

bool hand_over(Socket& client, const std::string& name, const std::string& secret,
               std::string* error) {
  if (name.rfind(kNamePrefix, 0) != 0 || secret.size() != kSecretSize) {
    *error = fmt::format("'{}' and a secret of {} bytes do not name a session's callback channel",
                         name, secret.size());
    return false;
  }
  std::string why;
  Socket session = connect_local(name, &why);
  if (!session.valid()) {
    *error = fmt::format("no session is waiting for a callback channel named '{}' (it may have "
                         "ended, or the name is from another server): {}",
                         name, why);
    return false;
  }
  if (!send_with_fd(session, secret, client.fd())) {
    *error = fmt::format("could not hand the callback channel to its session: {}",
                         std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace scuda::server
