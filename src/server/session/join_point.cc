#include "server/session/join_point.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <thread>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/job_tokens.h"
#include "common/random_bytes.h"
#include "protocol/frame_io.h"
#include "protocol/handshake.h"
#include "protocol/ops.h"
#include "server/listener/local_socket.h"
#include "server/status/session_table.h"

namespace scuda::server {

namespace {

constexpr char kNamePrefix[] = "scuda-join-";
constexpr size_t kSecretSize = 32;
// The local message that comes with a handed-over connection.
constexpr char kHandOver[] = "join";

Admission g_admission;

bool random_string(std::string* out, size_t size) {
  out->resize(size);
  return random_bytes(out->data(), size);
}

// The session's pid, what the joins are for, and random bytes so that no
// one else can guess it.
bool new_name(const char* what, std::string* name) {
  std::string nonce;
  if (!random_string(&nonce, 16)) return false;
  *name = fmt::format("{}{}-{}-", kNamePrefix, getpid(), what);
  for (unsigned char c : nonce) *name += fmt::format("{:02x}", c);
  return true;
}

}  // namespace

void set_admission(Admission a) { g_admission = std::move(a); }

const Admission& admission() { return g_admission; }

bool admits_anyone(const Admission& a) { return a.tokens.open() && a.job_key.empty(); }

std::string dropped_refusal(const std::string& job) {
  return fmt::format("authentication failed: job {}'s token was dropped (the job ended)", job);
}

namespace {

// A job's token: minted with the server's key, not expired, and not dropped
// unless it comes to be dropped again (a retried epilog).
std::string job_refusal(const std::string& presented, bool dropping, std::optional<Token>* token) {
  JobToken job;
  std::string why;
  const int64_t now = unix_now_ms() / 1000;
  if (!verify_job_token(g_admission.job_key, presented, now, &job, &why))
    return "authentication failed: " + why;
  if (!dropping && g_admission.table &&
      g_admission.table->revoked_jobs.revoked(job.job, job.expires))
    return dropped_refusal(job.job);
  if (token) *token = Token{.name = job_token_name(job.job), .expires = job.expires};
  return "";
}

}  // namespace

std::string hello_refusal(const protocol::Hello& hello, std::optional<Token>* token,
                          bool dropping) {
  if (!g_admission.job_key.empty() && looks_like_job_token(hello.token)) {
    if (std::string why = job_refusal(hello.token, dropping, token); !why.empty()) return why;
  } else if (const Token* found = g_admission.tokens.match(hello.token)) {
    if (token) *token = *found;
  } else if (!admits_anyone(g_admission)) {
    return "authentication failed: wrong or missing token (give the server's token with "
           "--token-file or SCUDA_TOKEN_FILE)";
  }
  if (hello.api_hash != protocol::kApiHash)
    return "client and server were built from different driver API tables: run the same "
           "scuda release on both machines";
  return "";
}

bool JoinPoint::open(const char* what, Take take, std::string* name, std::string* secret,
                     std::string* error) {
  std::lock_guard lock(mu_);
  if (name_.empty()) {
    std::string chosen, key;
    if (!new_name(what, &chosen) || !random_string(&key, kSecretSize)) {
      *error = fmt::format("no random bytes for the {}: {}", what, std::strerror(errno));
      return false;
    }
    Socket listener = listen_local(chosen, error);
    if (!listener.valid()) return false;
    what_ = what;
    name_ = chosen;
    secret_ = key;
    take_ = std::move(take);
    std::thread([this, l = std::move(listener)]() mutable { accept_joins(std::move(l)); }).detach();
  }
  *name = name_;
  *secret = secret_;
  return true;
}

// Refused joins leave the session waiting for the right ones; once the
// taker wants no more, the wait ends, and the local socket's name with it.
void JoinPoint::accept_joins(Socket listener) {
  for (;;) {
    Socket peer(accept4(listener.fd(), nullptr, nullptr, SOCK_CLOEXEC));
    if (peer.valid()) {
      Socket client = admit(peer);
      if (client.valid() && take_(std::move(client))) return;
    } else if (errno != EINTR && errno != ECONNABORTED) {
      spdlog::error("the {}'s local socket failed: {}", what_, std::strerror(errno));
      return;
    }
  }
}

// The TLS handshake and the join's own handshake are bounded by the
// handshake timeout: a client that stalls holds the door that long at most.
Socket JoinPoint::admit(Socket& peer) {
  if (!peer_is_same_user(peer)) {
    spdlog::warn("a process of another user tried to join this session's {}", what_);
    return Socket();
  }
  std::string note, error;
  Socket client = receive_with_fd(peer, sizeof kHandOver, &note);
  if (!client.valid()) {
    spdlog::warn("a join of the {} came without its connection", what_);
    return Socket();
  }
  const Admission& a = g_admission;
  if (a.tls && !tls::accept(client, *a.tls, a.handshake_timeout, &error)) {
    spdlog::warn("TLS handshake of a join of the {} failed: {}", what_, error);
    return Socket();
  }
  client.set_idle_limit(a.handshake_timeout);
  if (!check_join(client)) return Socket();
  client.set_idle_limit(std::chrono::milliseconds(0));
  return client;
}

bool JoinPoint::check_join(Socket& client) {
  protocol::Frame f;
  protocol::Hello hello;
  std::string error;
  const auto status = protocol::read_frame(client, &f, &error);
  if (status == protocol::ReadStatus::kClosed) return false;
  protocol::Reader r(f.payload);
  if (status == protocol::ReadStatus::kBad || f.header.op != protocol::kOpHello ||
      !protocol::decode(r, &hello))
    error = error.empty() ? "a join must send its handshake first" : error;
  else if (error = hello_refusal(hello);
           error.empty() && (hello.join != name_ || !protocol::tokens_equal(hello.secret, secret_)))
    error = fmt::format(
        "wrong secret for this session's {}: a client can only join its own "
        "session",
        what_);
  if (error.empty()) return true;
  spdlog::warn("refused a join of the {}: {}", what_, error);
  protocol::write_error(client, f.header.request_id, error);
  return false;
}

bool acknowledge_join(Socket& client) {
  protocol::FrameHeader h;
  h.flags = protocol::kReply;
  h.op = protocol::kOpHello;
  const uint32_t result = CUDA_SUCCESS;
  return protocol::write_frame(client, h, &result, sizeof result);
}

bool hand_over(Socket& client, const std::string& name, std::string* error) {
  if (name.rfind(kNamePrefix, 0) != 0) {
    *error = fmt::format("'{}' does not name a session's join point", name);
    return false;
  }
  std::string why;
  Socket session = connect_local(name, &why);
  if (!session.valid()) {
    *error = fmt::format(
        "no session is waiting for a join named '{}' (it may have ended, or "
        "the name is from another server): {}",
        name, why);
    return false;
  }
  if (!send_with_fd(session, kHandOver, client.fd())) {
    *error = fmt::format("could not hand the connection to its session: {}", std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace scuda::server
