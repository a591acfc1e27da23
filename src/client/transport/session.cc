#include "client/transport/session.h"

#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/modules/held_images.h"
#include "client/modules/kept_images.h"
#include "client/pools/route.h"
#include "client/pools/servers.h"
#include "common/config.h"
#include "common/lock_order.h"
#include "common/server_pick.h"

namespace scuda::client {

namespace {

Connection* g_connection = nullptr;  // the first server's; set once, never freed: used until exit
std::vector<Connection*>* g_all = nullptr;  // every server's; never freed
std::atomic<bool> g_open{false};
// Set in a forked child: its connections are its parent's, so it has none
// of its own, and its CUDA calls fail as in a child of NVIDIA's driver.
std::atomic<bool> g_forked{false};
std::vector<bool> g_locked_for_fork;  // only the forking thread touches it

// One-way requests the connections hold back (outbox.h) leave at exit, and
// before a fork, so that a child never sends them a second time.
void watch_process_events() {
  std::atexit([] {
    for (Connection* c : *g_all) c->flush_at_exit();
  });
  pthread_atfork(
      [] {
        // Every connection's locks, in g_all's order, which nothing else
        // nests: outside the rank order (common/lock_order.h).
        lock_order::Unchecked fork_handler;
        g_locked_for_fork.clear();
        for (Connection* c : *g_all) g_locked_for_fork.push_back(c->before_fork());
      },
      [] {
        for (size_t i = 0; i < g_all->size(); ++i)
          (*g_all)[i]->after_fork(g_locked_for_fork[i], false);
      },
      [] {
        for (size_t i = 0; i < g_all->size(); ++i)
          (*g_all)[i]->after_fork(g_locked_for_fork[i], true);
        g_forked.store(true, std::memory_order_relaxed);
        g_open.store(false, std::memory_order_release);
      });
}

// Opens a connection to `server`; nullptr, with *error, when it cannot.
// `offer_all`: the session offers all its GPUs (Connection::offer_all_gpus).
Connection* open_one(const std::string& server, const std::string& token, std::string* error,
                     bool offer_all = false) {
  auto* conn = new Connection;
  if (offer_all) conn->offer_all_gpus();
  const std::vector<protocol::ImageRef> images = images_kept_on(server);
  if (!conn->open(server, token, images, error)) {
    delete conn;
    return nullptr;
  }
  hold_kept(images, conn->welcome().images_kept);
  return conn;
}

// SCUDA_PICK=local-rank: the process keeps only the server at its local
// rank, so that each rank of a job has a GPU of its own, as a launcher that
// binds one GPU to each task gives it. False, having said why, when the
// list has no server for that rank.
bool keep_rank_server(std::vector<std::string>* servers) {
  std::string name;
  const int rank = local_rank(&name);
  if (rank < 0) {
    spdlog::info(
        "SCUDA_PICK=local-rank, but no local rank is set (LOCAL_RANK, SLURM_LOCALID): the "
        "process takes the first server, {}",
        servers->front());
    servers->resize(1);
    return true;
  }
  if (static_cast<size_t>(rank) >= servers->size()) {
    spdlog::error(
        "{}={} but SCUDA_SERVER names {} servers: with SCUDA_PICK=local-rank each local "
        "rank needs a server of its own",
        name, rank, servers->size());
    return false;
  }
  spdlog::info("{}={}: the process takes server {} of {}, {}", name, rank, rank + 1,
               servers->size(), (*servers)[rank]);
  *servers = {(*servers)[rank]};
  return true;
}

// Puts several servers in the order SCUDA_PICK asks for. Without a pick,
// every server serves: their GPUs are one list of devices (servers.h), and
// *together says so. False, having said why, when none is left.
bool pick_order(const std::string& token, std::vector<std::string>* servers, bool* together) {
  *together = false;
  if (servers->size() < 2) return true;
  const char* env = std::getenv("SCUDA_PICK");
  Pick pick = Pick::kFirst;
  if (!env || !*env) {
    *together = true;
    return true;
  }
  if (!parse_pick(env, &pick)) {
    spdlog::error("SCUDA_PICK is '{}'; it must be first, least-loaded or local-rank", env);
    return false;
  }
  if (pick == Pick::kFirst) return true;
  if (pick == Pick::kLocalRank) return keep_rank_server(servers);
  std::vector<std::string> left_out;
  std::string chosen, error;
  const bool ordered = order_by_load(servers, token, &left_out, &chosen, &error);
  for (const std::string& why : left_out) spdlog::warn("leaving a server out of the pick: {}", why);
  if (!ordered) {
    spdlog::error("{} (SCUDA_SERVER, SCUDA_PICK=least-loaded)", error);
    return false;
  }
  spdlog::info("{}", chosen);
  return true;
}

// The first server in `servers`' order that takes the client; passes over
// one down or refusing, with a warning.
std::vector<Connection*> open_first(const std::vector<std::string>& servers,
                                    const std::string& token) {
  std::string error;
  for (size_t i = 0; i < servers.size(); ++i) {
    error.clear();
    if (Connection* c = open_one(servers[i], token, &error)) return {c};
    if (i + 1 < servers.size())
      spdlog::warn("{}; trying the next server of the list, {}", error, servers[i + 1]);
  }
  spdlog::error("{}", servers.empty() ? "no scuda server is configured" : error);
  return {};
}

// Every server of the list, each one's GPUs part of the program's devices;
// none when one of them cannot be opened (a device list with holes would
// number the program's GPUs differently from run to run).
std::vector<Connection*> open_all(const std::vector<std::string>& servers,
                                  const std::string& token) {
  if (servers.size() > kMaxServers) {
    spdlog::error("SCUDA_SERVER names {} servers; a program may use at most {} together",
                  servers.size(), kMaxServers);
    return {};
  }
  std::vector<Connection*> open;
  for (const std::string& server : servers) {
    std::string error;
    Connection* c = open_one(server, token, &error, /*offer_all=*/true);
    if (!c) {
      spdlog::error(
          "{}; the GPUs of {} servers are one list of devices, so the program needs "
          "them all (SCUDA_PICK=first uses the first that answers instead)",
          error, servers.size());
      // Their sessions end now, not at exit. Freeing is safe: nothing was
      // sent on them yet, so their outboxes have started no thread.
      for (Connection* opened : open) delete opened;
      return {};
    }
    open.push_back(c);
  }
  spdlog::info("{} servers, {} devices in all", servers.size(), [&] {
    size_t n = 0;
    for (Connection* c : open) n += c->welcome().devices.size();
    return n;
  }());
  return open;
}

// Several servers (SCUDA_SERVER="a:14833,b:14833"): without SCUDA_PICK
// every one serves; with it, the first in its order that takes the client.
CUresult connect_once() {
  std::vector<std::string> servers = split_servers(configured_server());
  std::string token, error;
  const std::string token_file = configured_token_file();
  if (!token_file.empty() && !read_token_file(token_file, &token, &error)) {
    spdlog::error("{}", error);
    return CUDA_ERROR_NO_DEVICE;
  }
  bool together = false;
  if (!pick_order(token, &servers, &together)) return CUDA_ERROR_NO_DEVICE;
  std::vector<Connection*> open = together ? open_all(servers, token) : open_first(servers, token);
  if (open.empty()) return CUDA_ERROR_NO_DEVICE;
  // Several servers' GPUs are one list, which CUDA_VISIBLE_DEVICES narrows
  // here as a local driver narrows its own.
  const char* visible = together ? std::getenv("CUDA_VISIBLE_DEVICES") : nullptr;
  if (!set_servers(open, visible)) {
    spdlog::error(
        "CUDA_VISIBLE_DEVICES='{}' names none of the GPUs of the {} servers (give their "
        "indices in the list of all of them, from 0, or their UUIDs)",
        visible ? visible : "", open.size());
    for (Connection* opened : open) delete opened;  // nothing was sent on them yet
    return CUDA_ERROR_NO_DEVICE;
  }
  g_connection = open.front();
  g_all = new std::vector<Connection*>(open);
  watch_process_events();
  g_open.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

}  // namespace

CUresult open_session() {
  static std::once_flag once;
  static CUresult result = CUDA_ERROR_NOT_INITIALIZED;
  // NVML's stand-in may open the session before any driver entry point has
  // set up logging, which must never go to the program's stdout.
  pass_through();
  if (g_forked.load(std::memory_order_relaxed)) {
    static std::once_flag said;
    std::call_once(said, [] {
      spdlog::error(
          "this process is a fork of one that used CUDA: its CUDA calls fail, as with "
          "NVIDIA's driver; fork before the first CUDA call, or start the child with "
          "exec (multiprocessing's 'spawn')");
    });
    return CUDA_ERROR_NOT_INITIALIZED;
  }
  std::call_once(once, [] { result = connect_once(); });
  return result;
}

Connection* connection() {
  if (!g_open.load(std::memory_order_acquire)) return nullptr;
  return several_servers() ? server_connection(routed_server()) : g_connection;
}

const protocol::Welcome& snapshot() { return merged_welcome(); }

}  // namespace scuda::client
