// Blocking TCP sockets and address parsing shared by client and server.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <chrono>
#include <cstdint>
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

class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept
      : idle_limit_(other.idle_limit_), timed_out_(other.timed_out_), fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket() { close(); }

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
  bool timed_out() const { return timed_out_; }

 private:
  // Waits until a read would not block, within the idle limit.
  bool readable_in_time();

  std::chrono::milliseconds idle_limit_{0};
  bool timed_out_ = false;
  int fd_ = -1;
};

// Connects with TCP_NODELAY set; on failure says why, and *refused (if
// given) says whether every address refused (nothing listens there yet).
// A `timeout` above zero bounds each address's attempt.
Socket connect_tcp(const HostPort& addr, std::string* error,
                   std::chrono::milliseconds timeout = {}, bool* refused = nullptr);
// Turns on TCP keepalive with short intervals, so that a peer whose host
// vanished (power cut, cable pulled) is noticed on an idle connection in
// about a minute instead of never.
void keep_alive(int fd);

// Binds and listens; on failure says why.
Socket listen_tcp(const HostPort& addr, std::string* error);

}  // namespace scuda
