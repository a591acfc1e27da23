#include "common/tls_stream.h"

#include <poll.h>

#include <cerrno>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "common/tls.h"

namespace scuda {

namespace {

// The buffer that gathers a write's records: several records per system
// call, fewer than the socket's buffer holds.
constexpr long kWriteBuffer = 256 << 10;
// write_now() encrypts at most this much per call, so that a reader of the
// same stream waits at most that long for the mutex.
constexpr size_t kWriteBurst = 1 << 20;

}  // namespace

namespace {

// The SHA-256 of the certificate the other end of `ssl` showed; empty if none.
std::string certificate_sha256(SSL* ssl) {
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (!cert) return "";
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  const bool ok = X509_digest(cert, EVP_sha256(), digest, &length) == 1;
  X509_free(cert);
  return ok ? std::string(reinterpret_cast<char*>(digest), length) : "";
}

}  // namespace

TlsStream::TlsStream(ssl_st* ssl) : ssl_(ssl), peer_certificate_(certificate_sha256(ssl)) {
  buffer_writes();
}

void TlsStream::buffer_writes() {
  BIO* socket = SSL_get_wbio(ssl_);
  if (!socket || BIO_get_ktls_send(socket)) return;
  BIO* buffer = BIO_new(BIO_f_buffer());
  if (!buffer) return;
  if (BIO_set_write_buffer_size(buffer, kWriteBuffer) != 1) {
    BIO_free(buffer);
    return;
  }
  // The socket BIO stays the read side's too; the chain holds a reference
  // of its own, as SSL_set0_wbio drops the one the write side held.
  BIO_up_ref(socket);
  SSL_set0_wbio(ssl_, BIO_push(buffer, socket));
}

TlsStream::~TlsStream() { SSL_free(ssl_); }

ssize_t TlsStream::read_now(void* data, size_t size, short* wait) {
  std::lock_guard lock(mu_);
  size_t n = 0;
  ERR_clear_error();
  const int ret = SSL_read_ex(ssl_, data, size, &n);
  return ret == 1 ? static_cast<ssize_t>(n) : failed(ret, true, wait);
}

// Each SSL_write_ex moves one record (SSL_MODE_ENABLE_PARTIAL_WRITE); the
// loop hands the buffer many. A call that cannot go on after some records
// reports those, and the next call retries the record that waited.
ssize_t TlsStream::write_now(const void* data, size_t size, short* wait) {
  std::lock_guard lock(mu_);
  const auto* p = static_cast<const uint8_t*>(data);
  size_t done = 0;
  do {
    size_t n = 0;
    ERR_clear_error();
    const int ret = SSL_write_ex(ssl_, p + done, size - done, &n);
    if (ret != 1) return done ? static_cast<ssize_t>(done) : failed(ret, false, wait);
    done += n;
  } while (done < size && done < kWriteBurst);
  return static_cast<ssize_t>(done);
}

ssize_t TlsStream::flush_now(short* wait) {
  std::lock_guard lock(mu_);
  BIO* out = SSL_get_wbio(ssl_);
  if (BIO_wpending(out) == 0) return 0;
  errno = 0;
  if (BIO_flush(out) == 1) return 0;
  if (BIO_should_retry(out)) {
    *wait = POLLOUT;
    errno = EAGAIN;
    return -1;
  }
  if (errno == 0) errno = EPIPE;
  return -1;
}

// A peer that closed, with or without TLS's close_notify, reads as closed
// (SSL_OP_IGNORE_UNEXPECTED_EOF): frames say themselves whether one was cut.
ssize_t TlsStream::failed(int ret, bool reading, short* wait) {
  switch (SSL_get_error(ssl_, ret)) {
    case SSL_ERROR_WANT_READ:
      *wait = POLLIN;
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_WANT_WRITE:
      *wait = POLLOUT;
      errno = EAGAIN;
      return -1;
    case SSL_ERROR_ZERO_RETURN:
      if (reading) return 0;
      errno = EPIPE;
      return -1;
    case SSL_ERROR_SYSCALL:
      if (errno == 0 && reading) return 0;
      if (errno == 0) errno = EPIPE;
      return -1;
    default:
      error_ = tls::last_error();
      errno = EPROTO;
      return -1;
  }
}

std::string TlsStream::error() const {
  std::lock_guard lock(mu_);
  return error_;
}

}  // namespace scuda
