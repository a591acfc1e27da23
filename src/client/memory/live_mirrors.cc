#include "client/memory/live_mirrors.h"

#include <dlfcn.h>
#include <execinfo.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/op_calls.h"
#include "client/pools/route.h"
#include "client/pools/servers.h"
#include "client/runtime.h"
#include "client/state.h"
#include "client/transport/session.h"
#include "common/live_words.h"
#include "protocol/live_turns.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

struct LiveBlock {
  size_t size;
  uint8_t* twin;  // what the session's mirror holds, as far as this side knows
  uint32_t server;
  bool eager;  // its host writes must reach the device ahead of device work
};

// A server's channel: opened at its first live block, then served by a
// thread of its own until the connection breaks.
struct LiveChannelState {
  uint64_t eager_turn = 0;  // the turn that carries the eager blocks' last changes
  uint64_t wanted = 0;      // a turn someone waits for: taken even without blocks
  CUresult opened = CUDA_ERROR_NOT_INITIALIZED;
  bool lost = false;
  uint64_t turns = 0;  // turns that came back
};

}  // namespace

namespace parts {

// Never taken while waiting for the session on the main connection: the
// thread that trades turns takes it, and the session may be waiting for a
// kernel that waits for a turn.
struct LiveMirrors {
  std::mutex mu;
  std::condition_variable wake;    // a block came, or a synchronization wants turns
  std::condition_variable turned;  // a turn came back, or a channel was lost
  std::map<uintptr_t, LiveBlock> blocks;
  LiveChannelState channels[kMaxServers];
  std::atomic<int> eager{0};  // eager blocks, read without the lock
};

}  // namespace parts

namespace {

parts::LiveMirrors& live() { return client_state().live_mirrors.get(); }

// Turns without a change, one after another, before the thread starts to
// sleep between turns, and the longest sleep: a busy connection moves at
// the link's pace, an idle one costs little.
constexpr int kBusyTurns = 256;
constexpr auto kLongestNap = std::chrono::microseconds(1000);

// With the lock held: this server's changed words, as one snapshot
// (common/live_words.h), in ascending order.
std::vector<live::Run> take_changes(uint32_t server) {
  std::vector<live::Block> blocks;
  std::vector<bool> eager;
  for (auto& [address, block] : live().blocks)
    if (block.server == server) {
      blocks.push_back(
          {address, reinterpret_cast<const uint8_t*>(address), block.twin, block.size});
      eager.push_back(block.eager);
    }
  std::vector<live::Run> runs;
  live::take_snapshot(blocks, &runs, live::shared_scan_threads());
  // The twin has the changes now, though the session has them only once
  // this turn comes back: before_device_work waits for it.
  for (size_t i = 0; i < blocks.size(); ++i)
    if (eager[i] && blocks[i].changed)
      live().channels[server].eager_turn = live().channels[server].turns + 1;
  return runs;
}

// With the lock held: the session's words into the program's blocks, as
// one turn. Words of a block freed meanwhile are dropped; false for a run
// that is not whole words of a block.
bool apply_turn(const std::vector<live::Run>& runs) {
  std::vector<live::Landing> landings;
  auto& blocks = live().blocks;
  for (const live::Run& run : runs) {
    auto it = blocks.upper_bound(run.address);
    if (it == blocks.begin()) continue;
    --it;
    const uint64_t offset = run.address - it->first;
    if (offset >= it->second.size) continue;
    if (run.bytes.size() > it->second.size - offset || offset % 8 || run.bytes.size() % 8)
      return false;
    landings.push_back({run.address, reinterpret_cast<uint8_t*>(run.address),
                        it->second.twin + offset, run.bytes});
  }
  live::apply_turn(landings);
  return true;
}

bool any_block_of(uint32_t server) {
  for (const auto& [address, block] : live().blocks)
    if (block.server == server) return true;
  return false;
}

void lose(uint32_t server, const std::string& why) {
  std::lock_guard lock(live().mu);
  live().channels[server].lost = true;
  live().turned.notify_all();
  if (!exiting())
    spdlog::error(
        "lost the live mirrors' channel to server {}: {}; mapped host memory that kernels "
        "poll (NCCL's) no longer moves while they run",
        server, why);
}

// Trades turns with the session: this side's words, then the device's.
void serve(Socket s, uint32_t server) {
  int quiet = 0;
  auto nap = std::chrono::microseconds(50);
  std::string error;
  for (;;) {
    std::vector<live::Run> runs;
    {
      std::unique_lock lock(live().mu);
      const LiveChannelState& channel = live().channels[server];
      live().wake.wait(lock,
                       [&] { return any_block_of(server) || channel.turns < channel.wanted; });
      runs = take_changes(server);
    }
    if (!protocol::send_turn(s, runs)) return lose(server, "the connection broke");
    std::vector<live::Run> back;
    const protocol::TurnStatus got = protocol::read_turn(s, &back, &error);
    if (got != protocol::TurnStatus::kOk)
      return lose(server, got == protocol::TurnStatus::kClosed ? "the server closed it" : error);
    const bool moved = !runs.empty() || !back.empty();
    std::unique_lock lock(live().mu);
    if (!apply_turn(back)) {
      lock.unlock();
      return lose(server, "the server sent words outside every live mirror");
    }
    ++live().channels[server].turns;
    live().turned.notify_all();
    if (moved) {
      quiet = 0;
      nap = std::chrono::microseconds(50);
    } else if (++quiet > kBusyTurns) {
      live().wake.wait_for(lock, nap);
      nap = std::min(nap * 2, kLongestNap);
    }
  }
}

// Opens server `server`'s channel the first time (without the lock: it
// asks the session); later calls return the first result, or an error once
// the channel is lost.
CUresult open_channel(uint32_t server) {
  static std::once_flag once[kMaxServers];
  std::call_once(once[server], [server] {
    CUresult rc = CUDA_SUCCESS;
    protocol::op::JoinPoint join;
    std::string error;
    Socket s;
    if (rc = ask<protocol::op::LiveChannel>({}, &join); rc != CUDA_SUCCESS)
      spdlog::warn(
          "the server could not open a live mirrors' channel (CUresult {}; its log says "
          "why): mapped host memory is kept in step only around requests",
          static_cast<int>(rc));
    else if (s = server_connection(server)->join(join.name, join.secret, &error); !s.valid()) {
      spdlog::warn("the live mirrors' channel did not open: {}", error);
      rc = CUDA_ERROR_OPERATING_SYSTEM;
    }
    std::lock_guard lock(live().mu);
    live().channels[server].opened = rc;
    if (rc == CUDA_SUCCESS) std::thread(serve, std::move(s), server).detach();
  });
  std::lock_guard lock(live().mu);
  const LiveChannelState& channel = live().channels[server];
  return channel.lost ? CUDA_ERROR_DEVICE_UNAVAILABLE : channel.opened;
}

// The library holding code address `frame`, or "".
std::string library_of(void* frame) {
  Dl_info info{};
  return dladdr(frame, &info) && info.dli_fname ? info.dli_fname : "";
}

// Whether the calling thread is one NCCL started (its proxies'): the
// outermost frame of its stack that is neither the C library's nor the C++
// library's (which start threads) is NCCL's. NCCL's proxies allocate their
// connections' memory, which kernels and proxies poll while kernels run;
// what the program's own threads allocate through NCCL (its work FIFO,
// written before each launch) stays managed memory, pushed ahead of the
// launch. A stack too deep to see whole is the program's.
bool on_nccl_thread() {
  constexpr int kDepth = 64;
  void* frames[kDepth];
  const int n = backtrace(frames, kDepth);
  if (n >= kDepth) return false;
  for (int i = n - 1; i >= 0; --i) {
    const std::string lib = library_of(frames[i]);
    if (lib.find("/libc.so") != std::string::npos || lib.find("libpthread") != std::string::npos ||
        lib.find("libstdc++") != std::string::npos)
      continue;
    return lib.find("libnccl") != std::string::npos;
  }
  return false;
}

// With the lock held: returns once server `server` has brought back turn
// `turn`, or its channel is lost, or ten seconds passed (said).
void wait_for_turn(std::unique_lock<std::mutex>& lock, uint32_t server, uint64_t turn) {
  LiveChannelState& channel = live().channels[server];
  channel.wanted = std::max(channel.wanted, turn);
  live().wake.notify_all();
  if (!live().turned.wait_for(lock, std::chrono::seconds(10),
                              [&] { return channel.lost || channel.turns >= turn; }))
    spdlog::warn("the live mirrors' channel to server {} took over 10 s for a turn; going on",
                 server);
}

// With the lock held: returns once each server in `servers` has brought
// back two more turns (the first may have begun before the caller's
// writes), or its channel is lost, or ten seconds passed.
void wait_for_turns(std::unique_lock<std::mutex>& lock, const bool (&servers)[kMaxServers]) {
  uint64_t wanted_turns[kMaxServers] = {};
  for (uint32_t i = 0; i < kMaxServers; ++i) wanted_turns[i] = live().channels[i].turns + 2;
  for (uint32_t i = 0; i < kMaxServers; ++i)
    if (servers[i]) wait_for_turn(lock, i, wanted_turns[i]);
}

}  // namespace

namespace live_mirrors {

// SCUDA_LIVE_HOST_MEMORY, read once (the environment may not be read while
// another thread changes it), or what scuda_set_live_host_memory set since.
std::atomic<int>& mode() {
  static std::atomic<int>* m = [] {
    const char* e = std::getenv("SCUDA_LIVE_HOST_MEMORY");
    const std::string v = e && *e ? e : "nccl";
    return new std::atomic<int>(v == "all" ? kAll : v == "off" ? kOff : kNccl);  // never freed
  }();
  return *m;
}

bool wanted() {
  switch (mode().load(std::memory_order_relaxed)) {
    case kAll: return true;
    case kOff: return false;
    default: break;
  }
  const bool nccl = on_nccl_thread();
  spdlog::debug("a mapped block {} allocated on a thread of NCCL's: {}", nccl ? "is" : "is not",
                nccl ? "a live mirror" : "managed memory");
  return nccl;
}

CUresult add(void* p, size_t size, bool eager) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  if (!p || address % 8 || size % 8) return CUDA_ERROR_INVALID_VALUE;
  const uint32_t server = routed_server();
  if (server >= kMaxServers) return CUDA_ERROR_NOT_INITIALIZED;
  void* twin = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (twin == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  CUresult rc = open_channel(server);
  protocol::op::HostRegister::Reply reply;
  if (rc == CUDA_SUCCESS)
    rc = ask<protocol::op::HostRegister>(
        {address, size,
         CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE | protocol::op::kLiveMirror},
        &reply);
  if (rc == CUDA_SUCCESS && reply.device != address) {
    ask<protocol::op::HostUnregister>({address});
    rc = CUDA_ERROR_OUT_OF_MEMORY;  // the address is taken in the session
  }
  if (rc != CUDA_SUCCESS) {
    munmap(twin, size);
    return rc;
  }
  spdlog::debug("live mirror of {} bytes at {:#x} on server {}", size, address, server);
  std::lock_guard lock(live().mu);
  live().blocks[address] = {size, static_cast<uint8_t*>(twin), server, eager};
  if (eager) live().eager.fetch_add(1, std::memory_order_release);
  live().wake.notify_all();
  return CUDA_SUCCESS;
}

// Turns already under way may carry the block's words either way: the
// session's mirror goes only once they are back (else the session would
// find words outside its mirrors), and the address is given back only once
// the turns the session took before it dropped the mirror are back too
// (else they would land in a block the program allocates there next).
bool remove(void* p) {
  const auto address = reinterpret_cast<uintptr_t>(p);
  LiveBlock block{};
  {
    std::unique_lock lock(live().mu);
    auto it = live().blocks.find(address);
    if (it == live().blocks.end()) return false;
    block = it->second;
    live().blocks.erase(it);
    if (block.eager) live().eager.fetch_sub(1, std::memory_order_release);
    wait_for_turn(lock, block.server, live().channels[block.server].turns + 2);
  }
  munmap(block.twin, block.size);
  Route route;
  route.to(block.server);
  ask<protocol::op::HostUnregister>({address});
  std::unique_lock lock(live().mu);
  wait_for_turn(lock, block.server, live().channels[block.server].turns + 2);
  return true;
}

void after_sync() {
  std::unique_lock lock(live().mu);
  if (live().blocks.empty()) return;
  bool servers[kMaxServers] = {};
  for (const auto& [address, block] : live().blocks) servers[block.server] = true;
  wait_for_turns(lock, servers);
}

void before_device_work() {
  if (live().eager.load(std::memory_order_acquire) == 0) return;
  const uint32_t server = routed_server();
  std::unique_lock lock(live().mu);
  bool changed = false;
  for (const auto& [address, block] : live().blocks)
    changed = changed ||
              (block.eager && block.server == server &&
               std::memcmp(reinterpret_cast<const void*>(address), block.twin, block.size) != 0);
  const LiveChannelState& channel = live().channels[server];
  // Changes not yet taken need two turns (one may have begun before them);
  // changes taken already, the turn that carries them.
  if (changed) wait_for_turn(lock, server, channel.turns + 2);
  else if (channel.turns < channel.eager_turn) wait_for_turn(lock, server, channel.eager_turn);
}

}  // namespace live_mirrors

}  // namespace scuda::client

// For tests and benchmarks: which mapped blocks are live from now on, as
// SCUDA_LIVE_HOST_MEMORY says at the start (0 off, 1 nccl, 2 all); returns
// the mode before.
extern "C" __attribute__((visibility("default"))) int scuda_set_live_host_memory(int mode) {
  return scuda::client::live_mirrors::mode().exchange(mode, std::memory_order_relaxed);
}
