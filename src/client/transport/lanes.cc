#include "client/transport/lanes.h"

#include <pthread.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/op_calls.h"
#include "client/pools/route.h"
#include "client/pools/servers.h"
#include "client/runtime.h"
#include "client/transport/session.h"
#include "common/config.h"
#include "common/fan_out.h"
#include "common/lock_order.h"
#include "common/tls_client.h"
#include "protocol/ops.h"

namespace scuda::client::lanes {

namespace {

constexpr uint32_t kDefaultLanes = 4;
// A TLS stream moves about a third of what a plain one does, its records'
// encryption and decryption on the lane's thread, so TLS takes more lanes.
constexpr uint32_t kDefaultTlsLanes = 8;

// SCUDA_LANES, read once (a bad value warns once); 0 when it is not set.
uint32_t lanes_asked() {
  static const uint32_t asked =
      env_number("SCUDA_LANES", 1, protocol::kMaxLanes, 0, "the default for the server");
  return asked;
}

// SCUDA_LANES, else the default for the server's connection.
uint32_t wanted(uint32_t server) {
  if (lanes_asked()) return lanes_asked();
  const Connection* conn = server_connection(server);
  const bool tls = conn && tls::target_of(conn->address()).tls;
  return tls ? kDefaultTlsLanes : kDefaultLanes;
}

// Whether lanes are off for every server (SCUDA_LANES=1).
bool turned_off() { return lanes_asked() == 1; }

// The lanes' threads, each moving its stripes of the current copy.
class LaneSet {
 public:
  explicit LaneSet(std::vector<Socket> sockets)
      : sockets_(std::move(sockets)), crew_(sockets_.size(), [this](size_t i) { part(i); }) {}

  bool move(uint8_t* data, size_t size, uint32_t count, bool sending) {
    job_ = {data, size, count, sending};
    crew_.run(count);
    std::lock_guard lock(mu_);
    return !broken_;
  }

 private:
  struct Job {
    uint8_t* data;
    size_t size;
    uint32_t count;
    bool sending;
  };

  void part(size_t index) {
    Socket& s = sockets_[index];
    const bool kept = protocol::each_stripe(index, job_.count, job_.size, [&](size_t at, size_t n) {
      return job_.sending ? s.write_all(job_.data + at, n) : s.read_exact(job_.data + at, n);
    });
    if (!kept) break_all();
  }

  // A broken lane closes them all, which ends the waits of the others, here
  // and in the session, on bytes that will never come.
  void break_all() {
    std::lock_guard lock(mu_);
    if (broken_) return;
    broken_ = true;
    for (Socket& s : sockets_) shutdown(s.fd(), SHUT_RDWR);
  }

  std::vector<Socket> sockets_;
  Job job_{};
  RankedMutex mu_{LockRank::kLeaf, "LaneSet::mu_"};  // guards broken_
  bool broken_ = false;
  FanOut crew_;
};

// Each server of the session has lanes of its own (servers.h).
struct Lanes {
  LaneSet* set = nullptr;         // set once, never freed: its threads run until exit
  std::atomic<uint32_t> open{0};  // lanes copies may take; 0 once one broke
  std::once_flag opening;
};

Lanes g_lanes[kMaxServers];
std::atomic<uint64_t> g_bytes{0};  // bytes that crossed them

void give_up(const std::string& why) {
  spdlog::warn("no lanes to the scuda server ({}): large copies use the one connection", why);
}

bool open_all(uint32_t n, uint32_t server) {
  Route route;
  route.to(server);
  protocol::op::JoinPoint join;
  if (CUresult rc = ask<protocol::op::Lanes>({n}, &join); rc != CUDA_SUCCESS) {
    give_up(fmt::format("the server answered CUresult {}", static_cast<int>(rc)));
    return false;
  }
  const std::string& name = join.name;
  const std::string& secret = join.secret;
  std::vector<Socket> sockets;
  for (uint32_t i = 0; i < n; ++i) {
    std::string error;
    Socket s = server_connection(server)->join(name, secret, &error);
    if (!s.valid()) {
      give_up(error);
      return false;
    }
    sockets.push_back(std::move(s));
  }
  g_lanes[server].set = new LaneSet(std::move(sockets));
  g_lanes[server].open.store(n, std::memory_order_release);
  spdlog::debug("{} lanes open to server {}", n, server);
  return true;
}

void open_in_background(uint32_t server) {
  static std::once_flag forks;
  std::call_once(forks, [] {
    pthread_atfork(nullptr, nullptr, [] {
      for (Lanes& l : g_lanes) l.open.store(0);
    });
  });
  std::thread([server] { open_all(wanted(server), server); }).detach();
}

bool moved(uint8_t* data, size_t size, uint32_t count, bool sending) {
  Lanes& lanes = g_lanes[routed_server()];
  if (lanes.set->move(data, size, count, sending)) {
    g_bytes.fetch_add(size, std::memory_order_relaxed);
    return true;
  }
  if (lanes.open.exchange(0))
    spdlog::error(
        "a lane to the scuda server broke: this copy failed, and large copies use the "
        "one connection from now on");
  return false;
}

}  // namespace

uint32_t usable(size_t size) {
  if (size < kSmallest || turned_off()) return 0;
  const uint32_t server = routed_server();
  if (server >= kMaxServers) return 0;
  std::call_once(g_lanes[server].opening, open_in_background, server);
  return g_lanes[server].open.load(std::memory_order_acquire);
}

bool send(const void* src, size_t size, uint32_t count) {
  return moved(static_cast<uint8_t*>(const_cast<void*>(src)), size, count, true);
}

bool receive(void* dst, size_t size, uint32_t count) {
  return moved(static_cast<uint8_t*>(dst), size, count, false);
}

}  // namespace scuda::client::lanes

// For tests and benchmarks: how many lanes large copies take now, and how
// many bytes have crossed them.
extern "C" __attribute__((visibility("default"))) uint32_t scuda_lanes_open() {
  return scuda::client::lanes::g_lanes[0].open.load();
}
extern "C" __attribute__((visibility("default"))) uint64_t scuda_lane_bytes() {
  return scuda::client::lanes::g_bytes.load();
}
