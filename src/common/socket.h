// Blocking TCP sockets and address parsing shared by client and server.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

namespace scuda {

struct HostPort {
  std::string host;
  uint16_t port = 0;
};

// Parses "HOST:PORT" (or "[V6]:PORT"); the port must be 1..65535, or 0 too
// where `any_port` (an address to listen on: the system picks the port).
bool parse_host_port(const std::string& text, HostPort* out, std::string* error,
                     bool any_port = false);
// The port a listening socket is bound to; 0 when it cannot tell.
uint16_t bound_port(const class Socket& s);

// How long scuda's waits spin before they sleep, unless told otherwise: a
// client's for a reply (SCUDA_SPIN_US), a session's for the request after
// one it answered.
constexpr std::chrono::microseconds kWaitSpin{50};

class TlsStream;
// Frees a TlsStream where its type is complete (common/socket_tls.cc).
struct TlsStreamDeleter {
  void operator()(TlsStream* tls) const;
};
using TlsStreamPtr = std::unique_ptr<TlsStream, TlsStreamDeleter>;

// A connection's reads and writes: plain system calls, or, once a TLS
// handshake has handed it a TlsStream (common/tls.h), TLS's. The choice is
// made once per connection, and the plain path pays one pointer test.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept;
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket();

  int fd() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release();
  void close();

  bool write_all(const void* data, size_t size);
  // Writes every byte of every buffer; iov is modified.
  bool writev_all(iovec* iov, int count);
  // `spin`: as read_some's, for each wait.
  bool read_exact(void* data, size_t size, std::chrono::microseconds spin = {});
  // Reads what has arrived, at most `size` bytes, waiting for at least one:
  // the count, 0 once the peer closed, -1 on an error.
  ssize_t read_some(void* data, size_t size);
  // The same, but it reads without waiting until `spin` has passed, and
  // only then waits: bytes due within `spin` are taken without the wake-up
  // of a thread that waited, a good part of a round trip on a fast link.
  ssize_t read_some(void* data, size_t size, std::chrono::microseconds spin);

  // Reads that wait longer than `limit` for a first byte fail (-1, errno
  // ETIMEDOUT) and timed_out() says so from then on; zero: no limit.
  void set_idle_limit(std::chrono::milliseconds limit) { idle_limit_ = limit; }
  // Writes that wait longer than `limit` for room fail (-1, errno EAGAIN or
  // ETIMEDOUT), over plain TCP (SO_SNDTIMEO) as over TLS; zero: no limit.
  void set_write_limit(std::chrono::milliseconds limit);
  bool timed_out() const { return timed_out_; }

  // Reads or writes what can move without waiting: the count, 0 once the
  // peer closed (reads), or -1 with errno (EAGAIN: nothing can move now,
  // and *wait says the poll events to wait for).
  ssize_t read_now(void* data, size_t size, short* wait);
  ssize_t write_now(const void* data, size_t size, short* wait);
  // After write_now() calls: moves what TLS still holds of their bytes to
  // the socket. 0 once all has gone (at once on plain TCP), else -1 as above.
  ssize_t flush_now(short* wait);

  // After a TLS handshake (common/tls.h): the connection's I/O is TLS's.
  void use_tls(TlsStreamPtr tls);
  bool tls() const { return tls_ != nullptr; }
  // Why the connection's TLS failed, in OpenSSL's words; "" if it did not.
  std::string tls_error() const;
  // Over TLS, the SHA-256 of the certificate the other end showed (32
  // bytes); empty over plain TCP or when it showed none.
  std::string peer_certificate() const;

 private:
  // Waits until a read would not block, within the idle limit.
  bool readable_in_time();
  // TLS's side of each I/O call (common/socket_tls.cc).
  bool tls_writev_all(iovec* iov, int count);
  bool tls_write_all(const void* data, size_t size);
  // Hands every byte to TLS, which may hold the last of them until
  // tls_flush() sends them.
  bool tls_write_unflushed(const void* data, size_t size);
  bool tls_flush();
  ssize_t tls_read_some(void* data, size_t size);
  ssize_t tls_read_spinning(void* data, size_t size, std::chrono::microseconds spin);
  // Waits for `events`; reads' waits keep to the idle limit, writes' to
  // the write limit.
  bool tls_wait(short events);

  std::chrono::milliseconds idle_limit_{0};
  std::chrono::milliseconds write_limit_{0};
  bool timed_out_ = false;
  int fd_ = -1;
  TlsStreamPtr tls_;
};

// Connects with TCP_NODELAY set; on failure says why, and *refused (if
// given) says whether every address refused (nothing listens there yet).
// A `timeout` above zero bounds each address's attempt.
Socket connect_tcp(const HostPort& addr, std::string* error, std::chrono::milliseconds timeout = {},
                   bool* refused = nullptr);
// Turns on TCP keepalive with short intervals, so that a peer whose host
// vanished (power cut, cable pulled) is noticed on an idle connection in
// about a minute instead of never.
void keep_alive(int fd);

// Binds and listens; on failure says why.
Socket listen_tcp(const HostPort& addr, std::string* error);

}  // namespace scuda
