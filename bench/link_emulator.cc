// scuda-link: a TCP relay that makes loopback look like a longer link. Each
// connection to --listen is relayed to --to; every byte is delayed by half
// the round trip each way and, with --gbit, paced to that rate per
// direction, which all connections share, as they would one link. It models
// a loss-free link whose buffers hold --queue-mib per direction and
// connection: that bound plays the part of a TCP window.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#include <CLI/CLI.hpp>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "common/socket.h"

namespace {

using Clock = std::chrono::steady_clock;

struct LinkParams {
  Clock::duration one_way{};
  double bits_per_s = 0;  // 0: no limit
  size_t queue_bytes = 64 << 20;
};

// A chunk of bytes and when it leaves the link; no bytes means end of stream.
struct Chunk {
  Clock::time_point due;
  std::vector<char> data;
};

// One direction of the link: every connection's bytes that way take turns
// on it, paced to its rate.
class Line {
 public:
  explicit Line(const LinkParams& params) : params_(params) {}

  // When `bytes` read now leave the link.
  Clock::time_point schedule(size_t bytes);

 private:
  const LinkParams params_;
  std::mutex mutex_;
  Clock::time_point free_ = Clock::now();  // when pacing has sent all read so far
};

Clock::time_point Line::schedule(size_t bytes) {
  const Clock::time_point now = Clock::now();
  if (params_.bits_per_s <= 0) return now + params_.one_way;
  const std::chrono::duration<double> send_time(bytes * 8.0 / params_.bits_per_s);
  std::lock_guard lock(mutex_);
  free_ = std::max(now, free_) + std::chrono::duration_cast<Clock::duration>(send_time);
  return free_ + params_.one_way;
}

// One direction of one connection: a reader that timestamps what it reads
// and a writer that hands it on when due.
class Direction {
 public:
  Direction(scuda::Socket& from, scuda::Socket& to, Line& line, const LinkParams& params)
      : from_(from), to_(to), line_(line), params_(params) {}

  void read_loop();
  void write_loop();

 private:
  bool wait_for_room();
  void push(Chunk chunk);
  Chunk pop();

  scuda::Socket& from_;
  scuda::Socket& to_;
  Line& line_;
  const LinkParams params_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<Chunk> queue_;
  size_t queued_ = 0;
  bool broken_ = false;
};

// Bytes enter the link only when it has room, so a full link holds the
// sender back as a closed TCP window would; false once the far end is gone.
bool Direction::wait_for_room() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return broken_ || queued_ < params_.queue_bytes; });
  return !broken_;
}

void Direction::push(Chunk chunk) {
  std::lock_guard lock(mutex_);
  queued_ += chunk.data.size();
  queue_.push_back(std::move(chunk));
  changed_.notify_all();
}

Chunk Direction::pop() {
  std::unique_lock lock(mutex_);
  changed_.wait(lock, [&] { return !queue_.empty(); });
  Chunk chunk = std::move(queue_.front());
  queue_.pop_front();
  queued_ -= chunk.data.size();
  changed_.notify_all();
  return chunk;
}

void Direction::read_loop() {
  while (wait_for_room()) {
    std::vector<char> buffer(64 << 10);
    ssize_t n = ::read(from_.fd(), buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    buffer.resize(n > 0 ? static_cast<size_t>(n) : 0);
    const Clock::time_point due = line_.schedule(buffer.size());
    push({due, std::move(buffer)});
    if (n <= 0) return;
  }
}

// Sleeps until shortly before `due`, then spins: a thread woken from sleep
// runs tens of microseconds late, which would add to the emulated delay.
void wait_until(Clock::time_point due) {
  constexpr auto spin = std::chrono::microseconds(60);
  std::this_thread::sleep_until(due - spin);
  while (Clock::now() < due) {
  }
}

void Direction::write_loop() {
  // The default timer slack (50 us) would lengthen every sleep below, and so
  // the link's round trip, by up to that much each way.
  prctl(PR_SET_TIMERSLACK, 1UL);
  for (;;) {
    Chunk chunk = pop();
    wait_until(chunk.due);
    if (chunk.data.empty()) {
      ::shutdown(to_.fd(), SHUT_WR);
      return;
    }
    if (!to_.write_all(chunk.data.data(), chunk.data.size())) {
      std::lock_guard lock(mutex_);
      broken_ = true;
      changed_.notify_all();
      ::shutdown(from_.fd(), SHUT_RD);  // so the reader stops too
      return;
    }
  }
}

// Both sockets close when the last of the four threads lets go.
struct Connection {
  Connection(scuda::Socket c, scuda::Socket t, Line& up_line, Line& down_line, const LinkParams& p)
      : client(std::move(c)),
        target(std::move(t)),
        up(client, target, up_line, p),
        down(target, client, down_line, p) {}
  scuda::Socket client, target;
  Direction up, down;
};

struct Link {
  explicit Link(const LinkParams& p) : params(p), up(p), down(p) {}
  const LinkParams params;
  Line up, down;
};

void relay(scuda::Socket client, const scuda::HostPort& to, Link& link) {
  std::string error;
  scuda::Socket target = scuda::connect_tcp(to, &error);
  if (!target.valid()) {
    std::fprintf(stderr, "scuda-link: %s\n", error.c_str());
    return;
  }
  auto c = std::make_shared<Connection>(std::move(client), std::move(target), link.up, link.down,
                                        link.params);
  std::thread([c] { c->up.read_loop(); }).detach();
  std::thread([c] { c->up.write_loop(); }).detach();
  std::thread([c] { c->down.read_loop(); }).detach();
  std::thread([c] { c->down.write_loop(); }).detach();
}

int serve(const std::string& listen, const std::string& to, const LinkParams& params) {
  scuda::HostPort listen_addr, to_addr;
  std::string error;
  scuda::Socket server;
  if (scuda::parse_host_port(listen, &listen_addr, &error) &&
      scuda::parse_host_port(to, &to_addr, &error))
    server = scuda::listen_tcp(listen_addr, &error);
  if (!server.valid()) {
    std::fprintf(stderr, "scuda-link: %s\n", error.c_str());
    return 2;
  }
  static Link link(params);  // never freed: connections' threads use it until exit
  for (;;) {
    int fd = accept4(server.fd(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    relay(scuda::Socket(fd), to_addr, link);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string listen, to;
  double rtt_ms = 0, gbit = 0;
  size_t queue_mib = 64;
  CLI::App app{
      "scuda-link: relay TCP connections with added round-trip time and a bandwidth "
      "limit, to emulate a network link on loopback"};
  app.add_option("--listen", listen, "Accept connections on HOST:PORT")->required();
  app.add_option("--to", to, "Relay each connection to HOST:PORT")->required();
  app.add_option("--rtt-ms", rtt_ms, "Round-trip time to add, ms (half each way)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--gbit", gbit,
                 "Bandwidth per direction, shared by all connections, Gbit/s (0: no limit)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--queue-mib", queue_mib, "Bytes the link holds per direction, MiB")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  signal(SIGPIPE, SIG_IGN);
  LinkParams params;
  params.one_way = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double, std::milli>(rtt_ms / 2));
  params.bits_per_s = gbit * 1e9;
  params.queue_bytes = queue_mib << 20;
  return serve(listen, to, params);
}
