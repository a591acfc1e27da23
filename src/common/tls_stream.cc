#include "common/tls_stream.h"

#include <poll.h>

#include <cerrno>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "common/tls.h"

namespace scuda {

TlsStream::TlsStream(ssl_st* ssl) : ssl_(ssl) {}

TlsStream::~TlsStream() { SSL_free(ssl_); }

ssize_t TlsStream::read_now(void* data, size_t size, short* wait) {
  std::lock_guard lock(mu_);
  size_t n = 0;
  ERR_clear_error();
  const int ret = SSL_read_ex(ssl_, data, size, &n);
  return ret == 1 ? static_cast<ssize_t>(n) : failed(ret, true, wait);
}

ssize_t TlsStream::write_now(const void* data, size_t size, short* wait) {
  std::lock_guard lock(mu_);
  size_t n = 0;
  ERR_clear_error();
  const int ret = SSL_write_ex(ssl_, data, size, &n);
  return ret == 1 ? static_cast<ssize_t>(n) : failed(ret, false, wait);
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
