#include "peer.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <utility>

namespace scuda::bench {

namespace {

constexpr size_t kChunk = 1 << 20;

bool discard(Socket& s, uint64_t n, std::vector<char>& buf) {
  while (n > 0) {
    const size_t step = std::min<uint64_t>(n, buf.size());
    if (!s.read_exact(buf.data(), step)) return false;
    n -= step;
  }
  return true;
}

bool send_zeros(Socket& s, uint64_t n, const std::vector<char>& buf) {
  while (n > 0) {
    const size_t step = std::min<uint64_t>(n, buf.size());
    if (!s.write_all(buf.data(), step)) return false;
    n -= step;
  }
  return true;
}

// `spin`: how long to spin for this request (and, after a 'P', the next).
bool serve_one(Socket& s, std::vector<char>& buf, std::chrono::microseconds& spin) {
  char command = 0;
  uint64_t n = 0;
  if (s.read_some(&command, 1, spin) != 1 || !s.read_exact(&n, sizeof n)) return false;
  spin = command == 'P' ? kWaitSpin : std::chrono::microseconds{};
  switch (command) {
    case 'E':
    case 'P':
      if (n > buf.size()) return false;
      return s.read_exact(buf.data(), n) && s.write_all(buf.data(), n);
    case 'S': return discard(s, n, buf) && s.write_all("k", 1);
    case 'R': return send_zeros(s, n, buf);
    default: return false;
  }
}

void serve_connection(Socket s) {
  int one = 1;
  setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  std::vector<char> buf(kChunk);
  std::chrono::microseconds spin{};
  while (serve_one(s, buf, spin)) {
  }
}

void serve_forever(Socket server) {
  for (;;) {
    int fd = accept4(server.fd(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) std::thread(serve_connection, Socket(fd)).detach();
  }
}

}  // namespace

int run_echo_server(const std::string& listen) {
  HostPort addr;
  std::string error;
  Socket server;
  if (parse_host_port(listen, &addr, &error)) server = listen_tcp(addr, &error);
  if (!server.valid()) {
    std::fprintf(stderr, "scuda-bench-micro: %s\n", error.c_str());
    return 2;
  }
  serve_forever(std::move(server));
  return 0;
}

std::string start_local_echo() {
  std::string error;
  Socket server = listen_tcp(HostPort{"127.0.0.1", 0}, &error);
  sockaddr_in bound{};
  socklen_t len = sizeof bound;
  if (!server.valid() || getsockname(server.fd(), reinterpret_cast<sockaddr*>(&bound), &len) != 0)
    throw std::runtime_error("local echo peer: " + error);
  std::thread(serve_forever, std::move(server)).detach();
  return "127.0.0.1:" + std::to_string(ntohs(bound.sin_port));
}

RawLink::RawLink(const std::string& address) {
  HostPort addr;
  std::string error;
  if (parse_host_port(address, &addr, &error)) socket_ = connect_tcp(addr, &error);
  if (!socket_.valid()) throw std::runtime_error("raw TCP peer: " + error);
}

void RawLink::request(char command, size_t n) {
  char header[1 + sizeof(uint64_t)];
  const uint64_t n64 = n;
  header[0] = command;
  std::copy_n(reinterpret_cast<const char*>(&n64), sizeof n64, header + 1);
  if (!socket_.write_all(header, sizeof header)) throw std::runtime_error("raw TCP peer closed");
}

std::vector<double> RawLink::ping(const Plan& plan, std::chrono::microseconds spin) {
  return collect(plan, [&] {
    const Clock::time_point start = Clock::now();
    char message[1 + sizeof(uint64_t) + 4] = {spin.count() ? 'P' : 'E'};
    const uint64_t n = 4;
    std::memcpy(message + 1, &n, sizeof n);
    char answer[4];
    if (!socket_.write_all(message, sizeof message) ||
        !socket_.read_exact(answer, sizeof answer, spin))
      throw std::runtime_error("raw TCP peer closed");
    return seconds_since(start);
  });
}

// The client's side sends from and reads into a buffer as large as the
// copy, as the CUDA copies do, so both touch the same amount of memory.
std::vector<double> RawLink::upload(size_t bytes, const Plan& plan) {
  const std::vector<char> data(bytes, 1);
  return collect(plan, [&] {
    const Clock::time_point start = Clock::now();
    send(data.data(), bytes);
    return seconds_since(start);
  });
}

std::vector<double> RawLink::download(size_t bytes, const Plan& plan) {
  std::vector<char> data(bytes, 1);
  return collect(plan, [&] {
    const Clock::time_point start = Clock::now();
    receive(data.data(), bytes);
    return seconds_since(start);
  });
}

void RawLink::send(const char* data, size_t bytes) {
  request('S', bytes);
  char ack;
  if (!socket_.write_all(data, bytes) || !socket_.read_exact(&ack, 1))
    throw std::runtime_error("raw TCP peer closed");
}

void RawLink::receive(char* data, size_t bytes) {
  request('R', bytes);
  if (!socket_.read_exact(data, bytes)) throw std::runtime_error("raw TCP peer closed");
}

RawLinks::RawLinks(const std::string& address, size_t count) {
  for (size_t i = 0; i < count; ++i) links_.emplace_back(address);
}

// A link that fails ends the program (an exception on its thread): the
// figures would mean nothing.
template <class Move>
double RawLinks::in_parallel(char* data, size_t bytes, Move move) {
  const size_t share = (bytes + links_.size() - 1) / links_.size();
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  for (size_t i = 0, at = 0; at < bytes; ++i, at += share)
    threads.emplace_back([&, i, at] { move(links_[i], data + at, std::min(share, bytes - at)); });
  for (std::thread& t : threads) t.join();
  return seconds_since(start);
}

std::vector<double> RawLinks::upload(size_t bytes, const Plan& plan) {
  std::vector<char> data(bytes, 1);
  return collect(plan, [&] {
    return in_parallel(data.data(), bytes, [](RawLink& l, char* d, size_t n) { l.send(d, n); });
  });
}

std::vector<double> RawLinks::download(size_t bytes, const Plan& plan) {
  std::vector<char> data(bytes, 1);
  return collect(plan, [&] {
    return in_parallel(data.data(), bytes, [](RawLink& l, char* d, size_t n) { l.receive(d, n); });
  });
}

}  // namespace scuda::bench
