#include "server/memory/ipc_exports.h"

#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/random_bytes.h"
#include "protocol/codec.h"
#include "protocol/handshake.h"
#include "server/listener/local_socket.h"

namespace scuda::server {

namespace {

using protocol::IpcRef;

// A fetch asks with the export's id and secret; the answer is a status
// (0: found), the size, and the descriptor attached.
constexpr size_t kRequestBytes = 8 + 16;
constexpr size_t kAnswerBytes = 4 + 8;
// A peer that connects and says nothing cannot hold the exporting session's
// socket for longer than this, nor a silent exporter the importing one.
constexpr int kFetchTimeoutSeconds = 5;

std::string socket_name(uint32_t pid) { return fmt::format("scuda-ipc-{}", pid); }

void bound_waits(Socket& s) {
  timeval t{kFetchTimeoutSeconds, 0};
  setsockopt(s.fd(), SOL_SOCKET, SO_RCVTIMEO, &t, sizeof t);
  setsockopt(s.fd(), SOL_SOCKET, SO_SNDTIMEO, &t, sizeof t);
}

std::string secret_text(const IpcRef& ref) {
  return std::string(reinterpret_cast<const char*>(ref.secret.data()), ref.secret.size());
}

std::string answer_bytes(uint32_t status, uint64_t size) {
  protocol::Writer w;
  w.u32(status);
  w.u64(size);
  return std::string(w.data().begin(), w.data().end());
}

}  // namespace

bool IpcExports::add(Socket fd, uint64_t size, uint64_t key, IpcRef* ref, std::string* error) {
  std::lock_guard lock(mu_);
  if (!serving(error)) return false;
  if (key != 0) {
    for (const auto& [id, e] : exports_) {
      if (e.key == key) {
        *ref = e.ref;
        return true;
      }
    }
  }
  Export e;
  e.ref.pid = static_cast<uint32_t>(getpid());
  e.ref.id = next_id_++;
  if (!random_bytes(e.ref.secret.data(), e.ref.secret.size())) {
    *error = fmt::format("no random bytes for an IPC secret: {}", std::strerror(errno));
    return false;
  }
  e.fd = std::move(fd);
  e.size = size;
  e.key = key;
  *ref = e.ref;
  exports_[e.ref.id] = std::move(e);
  return true;
}

void IpcExports::drop(uint64_t key) {
  std::lock_guard lock(mu_);
  std::erase_if(exports_, [key](const auto& entry) { return entry.second.key == key; });
}

// The local socket opens with the first export: most sessions never share.
bool IpcExports::serving(std::string* error) {
  if (serving_) return true;
  Socket listener = listen_local(socket_name(static_cast<uint32_t>(getpid())), error);
  if (!listener.valid()) return false;
  std::thread([this, l = std::move(listener)]() mutable { serve(std::move(l)); }).detach();
  serving_ = true;
  return true;
}

void IpcExports::serve(Socket listener) {
  for (;;) {
    Socket peer(accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC));
    if (peer.valid()) {
      answer(peer);
    } else if (errno != EINTR && errno != ECONNABORTED) {
      spdlog::error("the IPC exports' local socket failed: {}", std::strerror(errno));
      return;
    }
  }
}

void IpcExports::answer(Socket& peer) {
  if (!peer_is_same_user(peer)) {
    spdlog::warn("a process of another user asked for an IPC export");
    return;
  }
  bound_waits(peer);
  uint8_t request[kRequestBytes];
  if (::recv(peer.fd(), request, sizeof request, 0) != static_cast<ssize_t>(sizeof request)) return;
  protocol::Reader r(request, sizeof request);
  const uint64_t id = r.u64();
  const std::string secret(reinterpret_cast<const char*>(r.take(16)), 16);
  std::lock_guard lock(mu_);
  auto it = exports_.find(id);
  if (it == exports_.end() || !protocol::tokens_equal(secret, secret_text(it->second.ref))) {
    spdlog::warn("refused a fetch of IPC export {}: no such export, or the wrong secret", id);
    const std::string no = answer_bytes(1, 0);
    ::send(peer.fd(), no.data(), no.size(), MSG_NOSIGNAL);
    return;
  }
  send_with_fd(peer, answer_bytes(0, it->second.size), it->second.fd.fd());
}

Socket fetch_export(const IpcRef& ref, uint64_t* size, std::string* error) {
  std::string why;
  Socket s = connect_local(socket_name(ref.pid), &why);
  if (!s.valid()) {
    *error = fmt::format(
        "the session that exported it (process {}) is gone, or belongs to "
        "another server: {}",
        ref.pid, why);
    return Socket();
  }
  bound_waits(s);
  protocol::Writer w;
  w.u64(ref.id);
  w.bytes(ref.secret.data(), ref.secret.size());
  if (::send(s.fd(), w.data().data(), w.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(w.size())) {
    *error = fmt::format("could not ask process {} for it: {}", ref.pid, std::strerror(errno));
    return Socket();
  }
  std::string answer;
  Socket fd = receive_with_fd(s, kAnswerBytes, &answer);
  protocol::Reader r(answer.data(), answer.size());
  const uint32_t status = r.u32();
  *size = r.u64();
  if (!fd.valid() || status != 0 || !r.done()) {
    *error = fmt::format(
        "process {} refused it: the export is gone or the handle is not one "
        "it gave out",
        ref.pid);
    return Socket();
  }
  return fd;
}

}  // namespace scuda::server
