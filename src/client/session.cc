#include "client/session.h"

#include <pthread.h>

#include <atomic>
#include <cstdlib>
#include <mutex>

#include <spdlog/spdlog.h>

#include "client/held_images.h"
#include "client/kept_images.h"
#include "common/config.h"

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

CUresult connect_once() {
  const std::string server = configured_server();
  std::string token, error;
  const std::string token_file = configured_token_file();
  if (!token_file.empty() && !read_token_file(token_file, &token, &error)) {
    spdlog::error("{}", error);
    return CUDA_ERROR_NO_DEVICE;
  }
  auto* conn = new Connection;
  const std::vector<protocol::ImageRef> images = images_kept_on(server);
  if (!conn->open(server, token, images, &error)) {
    spdlog::error("{}", error);
    delete conn;
    return CUDA_ERROR_NO_DEVICE;
  }
  hold_kept(images, conn->welcome().images_kept);
  g_connection = conn;
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
