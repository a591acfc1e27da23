#include "common/tls.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <spdlog/spdlog.h>

#include "common/tls_stream.h"

namespace scuda::tls {

Context::~Context() { SSL_CTX_free(ctx_); }

std::string last_error() {
  std::string out;
  for (unsigned long e; (e = ERR_get_error()) != 0;) {
    char text[256];
    ERR_error_string_n(e, text, sizeof text);
    out += out.empty() ? text : std::string("; ") + text;
  }
  return out;
}

namespace {

// TLS 1.3 only; no session tickets (each connection is one session's, and
// tickets would arrive as data after the handshake); reads take whole
// socket buffers at once; the kernel encrypts where it can.
ssl_ctx_st* new_context(const SSL_METHOD* method) {
  OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT, nullptr);
  SSL_CTX* ctx = SSL_CTX_new(method);
  if (!ctx) return nullptr;
  SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
  SSL_CTX_set_num_tickets(ctx, 0);
  SSL_CTX_set_options(ctx, SSL_OP_ENABLE_KTLS | SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_TICKET);
  SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_read_ahead(ctx, 1);
  SSL_CTX_set_default_read_buffer_len(ctx, 256 << 10);
  return ctx;
}

// Takes ownership of `ctx`; on a failure, frees it and says `what` failed.
std::shared_ptr<const Context> checked(ssl_ctx_st* ctx, bool ok, const std::string& what,
                                       std::string* error) {
  auto c = std::make_shared<const Context>(ctx);
  if (ctx && ok) return c;
  *error = fmt::format("{}: {}", what, last_error());
  return nullptr;
}

bool use_pair(SSL_CTX* ctx, const std::string& cert, const std::string& key, std::string* what) {
  *what = fmt::format("cannot use the certificate {} with the key {}", cert, key);
  return SSL_CTX_use_certificate_chain_file(ctx, cert.c_str()) == 1 &&
         SSL_CTX_use_PrivateKey_file(ctx, key.c_str(), SSL_FILETYPE_PEM) == 1 &&
         SSL_CTX_check_private_key(ctx) == 1;
}

}  // namespace

std::shared_ptr<const Context> server_context(const ServerFiles& files, std::string* error) {
  SSL_CTX* ctx = new_context(TLS_server_method());
  std::string what = "cannot set up TLS";
  bool ok = ctx && use_pair(ctx, files.cert, files.key, &what);
  if (ok && !files.client_ca.empty()) {
    what = fmt::format("cannot read the client CA {}", files.client_ca);
    STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(files.client_ca.c_str());
    ok = names && SSL_CTX_load_verify_locations(ctx, files.client_ca.c_str(), nullptr) == 1;
    if (names) SSL_CTX_set_client_CA_list(ctx, names);
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  }
  return checked(ctx, ok, what, error);
}

std::shared_ptr<const Context> client_context(const ClientFiles& files, std::string* error) {
  SSL_CTX* ctx = new_context(TLS_client_method());
  std::string what = files.ca.empty() ? "cannot load the system's trusted CAs"
                                      : fmt::format("cannot read the CA file {}", files.ca);
  bool ok = ctx &&
            (files.ca.empty() ? SSL_CTX_set_default_verify_paths(ctx)
                              : SSL_CTX_load_verify_locations(ctx, files.ca.c_str(), nullptr)) == 1;
  if (ok && (!files.cert.empty() || !files.key.empty()))
    ok = use_pair(ctx, files.cert, files.key.empty() ? files.cert : files.key, &what);
  if (ctx) SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  return checked(ctx, ok, what, error);
}

namespace {

using std::chrono::milliseconds;

// Waits for `events` on `fd` until `deadline` (none when limit is zero).
bool wait_for(int fd, short events, std::chrono::steady_clock::time_point deadline, bool bounded) {
  for (;;) {
    int timeout = -1;
    if (bounded) {
      const auto left =
          std::chrono::duration_cast<milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) return errno = ETIMEDOUT, false;
      timeout = static_cast<int>(left.count());
    }
    pollfd p{fd, events, 0};
    const int n = poll(&p, 1, timeout);
    if (n > 0) return true;
    if (n == 0) return errno = ETIMEDOUT, false;
    if (errno != EINTR) return false;
  }
}

// Runs the handshake on a non-blocking socket; the socket stays
// non-blocking, as TlsStream wants it. On failure says why, in OpenSSL's
// words (or the system's).
bool handshake(Socket& s, SSL* ssl, bool server, milliseconds limit, std::string* error) {
  fcntl(s.fd(), F_SETFL, fcntl(s.fd(), F_GETFL) | O_NONBLOCK);
  SSL_set_fd(ssl, s.fd());
  const auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    ERR_clear_error();
    const int ret = server ? SSL_accept(ssl) : SSL_connect(ssl);
    if (ret == 1) break;
    const int e = SSL_get_error(ssl, ret);
    const short events = static_cast<short>(e == SSL_ERROR_WANT_READ    ? POLLIN
                                            : e == SSL_ERROR_WANT_WRITE ? POLLOUT
                                                                        : 0);
    if (events && wait_for(s.fd(), events, deadline, limit.count() > 0)) continue;
    const std::string why = last_error();
    *error = !why.empty()                      ? why
             : events                          ? "no TLS handshake in time"
             : e == SSL_ERROR_SYSCALL && errno ? std::strerror(errno)
                                               : "the peer closed the connection";
    SSL_free(ssl);
    return false;
  }
  spdlog::debug("{} with {}; kernel TLS offload: sending {}, receiving {}", SSL_get_version(ssl),
                SSL_get_cipher_name(ssl), BIO_get_ktls_send(SSL_get_wbio(ssl)) ? "on" : "off",
                BIO_get_ktls_recv(SSL_get_rbio(ssl)) ? "on" : "off");
  s.use_tls(TlsStreamPtr(new TlsStream(ssl)));
  return true;
}

// The certificate must name `host`: as an IP address SAN when it is one,
// else as a DNS name, which the client also sends (SNI).
bool expect_name(SSL* ssl, const std::string& host) {
  in6_addr ip;
  const bool is_ip =
      inet_pton(AF_INET, host.c_str(), &ip) == 1 || inet_pton(AF_INET6, host.c_str(), &ip) == 1;
  if (is_ip) return X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host.c_str()) == 1;
  return SSL_set_tlsext_host_name(ssl, host.c_str()) == 1 && SSL_set1_host(ssl, host.c_str()) == 1;
}

// The user's words for a handshake the client gave up on.
std::string client_failure(SSL* ssl, const std::string& host, const std::string& why) {
  const long verify = SSL_get_verify_result(ssl);
  if (verify == X509_V_ERR_HOSTNAME_MISMATCH || verify == X509_V_ERR_IP_ADDRESS_MISMATCH)
    return fmt::format(
        "TLS: the server's certificate does not name '{}': connect with a name "
        "its certificate holds, or give the server a certificate for '{}' "
        "(scuda cert --name {})",
        host, host, host);
  if (verify != X509_V_OK)
    return fmt::format(
        "TLS: the server's certificate is not trusted: {} (the CA comes from "
        "SCUDA_TLS_CA or scuda run --tls-ca, else the system's trust store)",
        X509_verify_cert_error_string(verify));
  if (why.find("wrong version number") != std::string::npos ||
      why.find("packet length too long") != std::string::npos)
    return "TLS: the server answered without TLS: it was started without --tls-cert, so "
           "connect without TLS (no tls:// address, no SCUDA_TLS_CA or SCUDA_TLS_CERT)";
  return "TLS handshake failed: " + why;
}

}  // namespace

bool accept(Socket& s, const Context& c, milliseconds limit, std::string* error) {
  SSL* ssl = SSL_new(c.get());
  if (!ssl) return *error = last_error(), false;
  return handshake(s, ssl, true, limit, error);
}

bool connect(Socket& s, const Context& c, const std::string& host, milliseconds limit,
             std::string* error) {
  SSL* ssl = SSL_new(c.get());
  if (!ssl) return *error = last_error(), false;
  if (!expect_name(ssl, host)) {
    *error = fmt::format("TLS: cannot check the server's name '{}': {}", host, last_error());
    SSL_free(ssl);
    return false;
  }
  std::string why;
  SSL_up_ref(ssl);  // kept for the wording after a failed handshake frees its own
  const bool ok = handshake(s, ssl, false, limit, &why);
  if (!ok) *error = client_failure(ssl, host, why);
  SSL_free(ssl);
  return ok;
}

bool connect_pinned(Socket& s, const std::string& certificate, milliseconds limit,
                    std::string* error) {
  // No CA: the certificate is checked against the pin after the handshake.
  static const Context* const pinned = [] {
    SSL_CTX* ctx = new_context(TLS_client_method());
    if (ctx) SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    return new Context(ctx);  // never freed: sessions use it until exit
  }();
  SSL* ssl = pinned->get() ? SSL_new(pinned->get()) : nullptr;
  if (!ssl) return *error = "TLS: " + last_error(), false;
  std::string why;
  if (!handshake(s, ssl, false, limit, &why)) return *error = "TLS handshake failed: " + why, false;
  if (certificate.empty() || s.peer_certificate() != certificate) {
    s.close();
    *error = "TLS: the server's certificate is not the one its client checked";
    return false;
  }
  return true;
}

std::string explain_refusal(const std::string& tls_error) {
  if (tls_error.find("certificate required") != std::string::npos)
    return "TLS: the server requires a client certificate signed by its client CA: give "
           "SCUDA_TLS_CERT and SCUDA_TLS_KEY (scuda run --tls-cert, --tls-key)";
  if (tls_error.find("alert") != std::string::npos)
    return "TLS: the server refused this client's certificate: " + tls_error;
  return "";
}

}  // namespace scuda::tls
