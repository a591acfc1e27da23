#include "client/session.h"

#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/held_images.h"
#include "client/kept_images.h"
#include "common/config.h"
#include "common/server_pick.h"

namespace scuda::client {

namespace {

Connection* g_connection = nullptr;  // set once, never freed: used until exit
std::atomic<bool> g_open{false};
bool g_locked_for_fork = false;  // only the forking thread touches it

// One-way requests the connection holds back (outbox.h) leave at exit, and
// before a fork, so that a child never sends them a second time.
void watch_process_events() {
  std::atexit([] { g_connection->flush_at_exit(); });
  pthread_atfork([] { g_locked_for_fork = g_connection->before_fork(); },
                 [] { g_connection->after_fork(g_locked_for_fork, false); },
                 [] { g_connection->after_fork(g_locked_for_fork, true); });
}

// Opens a connection to `server`; nullptr, with *error, when it cannot.
Connection* open_one(const std::string& server, const std::string& token, std::string* error) {
  auto* conn = new Connection;
  const std::vector<protocol::ImageRef> images = images_kept_on(server);
  if (!conn->open(server, token, images, error)) {
    delete conn;
    return nullptr;
  }
  hold_kept(images, conn->welcome().images_kept);
  return conn;
}

// Puts several servers in the order SCUDA_PICK asks for. Without a pick,
// several servers would be one list of devices, which scuda does not show
// yet: the first server alone serves, and the warning says so. False, having
// said why, when none is left.
bool pick_order(const std::string& token, std::vector<std::string>* servers) {
  if (servers->size() < 2) return true;
  const char* env = std::getenv("SCUDA_PICK");
  Pick pick = Pick::kFirst;
  if (!env || !*env) {
    spdlog::warn("SCUDA_SERVER names {} servers, but scuda does not yet show the GPUs of several "
                 "servers as one list of devices: this program uses {} alone (SCUDA_PICK=first or "
                 "least-loaded, or scuda run --pick, makes it choose among them)",
                 servers->size(), servers->front());
    servers->resize(1);
    return true;
  }
  if (!parse_pick(env, &pick)) {
    spdlog::error("SCUDA_PICK is '{}'; it must be first or least-loaded", env);
    return false;
  }
  if (pick == Pick::kFirst) return true;
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

// Several servers (SCUDA_SERVER="a:14833,b:14833"): SCUDA_PICK says which
// one serves the program; the first in its order that takes the client does,
// so that one down or refusing is passed over.
CUresult connect_once() {
  std::vector<std::string> servers = split_servers(configured_server());
  std::string token, error;
  const std::string token_file = configured_token_file();
  if (!token_file.empty() && !read_token_file(token_file, &token, &error)) {
    spdlog::error("{}", error);
    return CUDA_ERROR_NO_DEVICE;
  }
  if (!pick_order(token, &servers)) return CUDA_ERROR_NO_DEVICE;
  for (size_t i = 0; i < servers.size() && !g_connection; ++i) {
    error.clear();
    g_connection = open_one(servers[i], token, &error);
    if (!g_connection && i + 1 < servers.size())
      spdlog::warn("{}; trying the next server of the list, {}", error, servers[i + 1]);
  }
  if (!g_connection) {
    spdlog::error("{}", servers.empty() ? "no scuda server is configured" : error);
    return CUDA_ERROR_NO_DEVICE;
  }
  watch_process_events();
  g_open.store(true, std::memory_order_release);
  return CUDA_SUCCESS;
}

}  // namespace

CUresult open_session() {
  static std::once_flag once;
  static CUresult result = CUDA_ERROR_NOT_INITIALIZED;
  std::call_once(once, [] { result = connect_once(); });
  return result;
}

Connection* connection() {
  return g_open.load(std::memory_order_acquire) ? g_connection : nullptr;
}

const protocol::Welcome& snapshot() { return g_connection->welcome(); }

}  // namespace scuda::client
