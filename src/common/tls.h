// TLS 1.3 for scuda's connections (docs/protocol.md, "TLS"), with OpenSSL:
// the configurations a server and a client hold, and the handshakes that
// turn a connected Socket into a TLS one (common/tls_stream.h).
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "common/socket.h"

struct ssl_ctx_st;

namespace scuda::tls {

// One side's configuration (an SSL_CTX), shared by its connections.
class Context {
 public:
  explicit Context(ssl_ctx_st* ctx) : ctx_(ctx) {}
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  ssl_ctx_st* get() const { return ctx_; }

 private:
  ssl_ctx_st* ctx_;
};

struct ServerFiles {
  std::string cert;       // PEM: the server's certificate (and its chain)
  std::string key;        // PEM: its private key
  std::string client_ca;  // PEM: CAs a client's certificate must come from; empty: none asked
};

// The server's configuration; null, saying why, when a file is unusable.
std::shared_ptr<const Context> server_context(const ServerFiles& files, std::string* error);

struct ClientFiles {
  std::string ca;    // PEM: CAs the server's certificate must come from; empty: the system's
  std::string cert;  // PEM: this client's certificate, for a server that asks; may be empty
  std::string key;   // PEM: its private key
};

// The client's configuration; null, saying why, when a file is unusable.
std::shared_ptr<const Context> client_context(const ClientFiles& files, std::string* error);

// The server's half of the handshake on `s`, within `limit` (zero: no
// limit); from then on the socket's I/O is TLS's. On failure says why.
bool accept(Socket& s, const Context& c, std::chrono::milliseconds limit, std::string* error);

// The client's half: the server's certificate must come from the context's
// CAs and name `host` (a DNS name or an IP address). On failure says why,
// in words meant for the user.
bool connect(Socket& s, const Context& c, const std::string& host, std::chrono::milliseconds limit,
             std::string* error);

// The client's half with no CA at all: the server's certificate must be the
// one whose SHA-256 is `certificate` (Socket::peer_certificate), as another
// connection that checked it against its CAs and name saw it. A server's
// session reaches another server so, with what its client saw there.
bool connect_pinned(Socket& s, const std::string& certificate, std::chrono::milliseconds limit,
                    std::string* error);

// OpenSSL's queued errors, worded and cleared; "" when there are none.
std::string last_error();

// What a failed read of the server's first answer over TLS means, from the
// TLS failure (`tls_error`, Socket::tls_error): a client certificate the
// server wanted or refused; else "".
std::string explain_refusal(const std::string& tls_error);

}  // namespace scuda::tls
