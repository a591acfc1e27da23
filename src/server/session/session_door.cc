// A connection's first bytes (docs/protocol.md, "TLS"). On a server with
// TLS they are a TLS handshake, run here in the session's own process, or
// a join's route in the clear, which names the session to hand the
// connection to before any secret crosses. A client that came the other
// way (plain to a TLS server, TLS to a plain one) is told what to change.
#include <sys/socket.h>

#include <cerrno>

#include <spdlog/spdlog.h>

#include "protocol/frame_io.h"
#include "protocol/ops.h"
#include "server/session/join_point.h"
#include "server/session/session.h"

namespace scuda::server {

using protocol::Frame;
using protocol::ReadStatus;

namespace {

// The first byte of a TLS handshake record (a ClientHello); a frame's first
// byte is its magic's.
constexpr uint8_t kTlsHandshakeRecord = 0x16;

// The connection's first byte, left in place; -1 once the client closed.
int peek_first_byte(const Socket& s) {
  uint8_t first = 0;
  ssize_t n;
  do n = ::recv(s.fd(), &first, 1, MSG_PEEK);
  while (n < 0 && errno == EINTR);
  return n == 1 ? first : -1;
}

// Reads what the client has sent so far: a socket closed with bytes unread
// resets the connection, which could reach the client before the refusal.
void drain(const Socket& s) {
  uint8_t buf[4096];
  while (::recv(s.fd(), buf, sizeof buf, MSG_DONTWAIT) > 0) {
  }
}

}  // namespace

Session::Opening Session::open_connection(protocol::Hello* hello, uint64_t* request_id,
                                          uint32_t* op) {
  const int first = peek_first_byte(socket_);
  if (first < 0) return Opening::kEnd;
  if (first == kTlsHandshakeRecord && !options_.tls) {
    drain(socket_);
    refuse(0,
           "this server does not use TLS (it was started without --tls-cert): connect "
           "without TLS");
    return Opening::kEnd;
  }
  if (first == kTlsHandshakeRecord && !start_tls()) return Opening::kEnd;
  // Unbuffered: a join's TLS handshake, after its route, is its session's to read.
  Frame f;
  std::string error;
  const ReadStatus status = protocol::read_frame(socket_, &f, &error);
  if (status == ReadStatus::kClosed) return Opening::kEnd;
  *request_id = f.header.request_id;
  *op = f.header.op;
  if (status == ReadStatus::kOk && f.header.op == protocol::kOpJoinRoute && !socket_.tls())
    return route(f) ? Opening::kRouted : Opening::kEnd;
  if (options_.tls && !socket_.tls()) {
    refuse(f.header.request_id,
           "this server takes TLS connections only: connect to "
           "tls://HOST:PORT, or give its CA (SCUDA_TLS_CA, scuda run --tls-ca)");
    return Opening::kEnd;
  }
  if (status == ReadStatus::kBad ||
      (f.header.op != protocol::kOpHello && f.header.op != protocol::kOpStatus &&
       f.header.op != protocol::kOpTokenDrop)) {
    refuse(f.header.request_id,
           status == ReadStatus::kBad ? error : "the first frame must be the handshake");
    return Opening::kEnd;
  }
  return check_hello(f, hello) ? Opening::kHello : Opening::kEnd;
}

// Bounded by the handshake's alarm, like the rest of the handshake.
bool Session::start_tls() {
  std::string error;
  if (tls::accept(socket_, *options_.tls, std::chrono::milliseconds(0), &error)) return true;
  spdlog::warn("TLS handshake failed: {}", error);
  report_.error();
  return false;
}

// A refusal of a route on a TLS server crosses TLS: the client has gone on
// to its TLS handshake, and would take a plain frame for a plain server.
// The join's HELLO, which the client sent meanwhile, is read first, so that
// the refusal is not lost to a reset.
bool Session::route(const Frame& f) {
  protocol::Reader r(f.payload);
  const std::string name = r.str();
  std::string error = r.done() ? "" : "malformed join route";
  if (error.empty() && hand_over(socket_, name, &error)) {
    spdlog::info("handed a joining connection to its session");
    return true;
  }
  if (options_.tls && !start_tls()) return false;
  Frame hello;
  std::string ignored;
  protocol::read_frame(socket_, &hello, &ignored);
  refuse(hello.header.request_id, error);
  return false;
}

}  // namespace scuda::server
