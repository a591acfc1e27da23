// A TLS session on a connected socket, once its handshake has succeeded
// (common/tls.h): Socket's reads and writes go through it. Its socket is
// non-blocking and a mutex serializes OpenSSL's calls, so that one thread
// may read while another writes, as threads do on a plain socket; the
// waits happen outside the mutex, in Socket. Where the kernel does not
// encrypt, a write's records gather in a buffer and reach the socket in
// large writes, as plain TCP's bytes do: one system call and one segment
// per 16 KiB record would cap a lane well below plain TCP. Bytes may wait
// there until flush_now() moves them.
#pragma once

#include <sys/types.h>

#include <mutex>
#include <string>

#include "common/lock_order.h"

struct ssl_st;

namespace scuda {

class TlsStream {
 public:
  // Takes ownership of `ssl`, whose handshake is done.
  explicit TlsStream(ssl_st* ssl);
  ~TlsStream();
  TlsStream(const TlsStream&) = delete;
  TlsStream& operator=(const TlsStream&) = delete;

  // Moves what it can without waiting: the count; 0 once the peer closed
  // (reads only); -1 with errno EAGAIN and *wait the poll events to wait
  // for, or another errno (EPROTO: a TLS failure, which error() words).
  ssize_t read_now(void* data, size_t size, short* wait);
  ssize_t write_now(const void* data, size_t size, short* wait);
  // Moves what write_now() left in the buffer to the socket: 0 once none is
  // left, else -1 as the calls above (EAGAIN with *wait, or another errno).
  ssize_t flush_now(short* wait);

  // Why the last TLS failure happened, in OpenSSL's words; empty if none.
  std::string error() const;
  // The SHA-256 of the certificate the other end showed in the handshake
  // (32 bytes); empty if it showed none.
  const std::string& peer_certificate() const { return peer_certificate_; }

 private:
  // Puts a write buffer between the TLS session and its socket, unless the
  // kernel encrypts the socket's writes.
  void buffer_writes();
  // With mu_ held: maps SSL_get_error's answer for a call that moved nothing.
  ssize_t failed(int ret, bool reading, short* wait);

  ssl_st* ssl_;
  mutable RankedMutex mu_{LockRank::kTls, "TlsStream::mu_"};
  std::string error_;
  std::string peer_certificate_;
};

}  // namespace scuda
