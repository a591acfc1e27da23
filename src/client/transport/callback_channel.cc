#include "client/transport/callback_channel.h"

#include <atomic>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "client/contexts/async_notifications.h"
#include "client/logs.h"
#include "client/memory/registered_memory.h"
#include "client/op_calls.h"
#include "client/pools/route.h"
#include "client/pools/servers.h"
#include "client/runtime.h"
#include "client/streams/host_callbacks.h"
#include "client/transport/session.h"
#include "protocol/frame_io.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

std::atomic<bool> g_lost{false};

void lose(const std::string& why) {
  g_lost.store(true);
  if (!exiting())
    spdlog::error(
        "lost the callback channel to the scuda server: {}; host callbacks fail from "
        "now on",
        why);
}

}  // namespace

std::string run_reached(uint32_t op, uint64_t id, protocol::Reader& r) {
  const std::string unknown =
      fmt::format("the server named callback {}, which this process never registered", id);
  if (op == protocol::kOpAsyncNotification) {
    const auto info = r.get<CUasyncNotificationInfo>();
    return r.done() && run_async_notification(id, info) ? "" : unknown;
  }
  if (op == protocol::kOpLogMessage) {
    const auto level = static_cast<CUlogLevel>(r.u32());
    const std::string_view message = r.blob();
    return r.done() && run_log_callback(id, level, message) ? "" : unknown;
  }
  if (op != protocol::kOpHostCallback)
    return "the server sent a frame that is not a reached callback";
  return r.done() && run_host_callback(id) ? "" : unknown;
}

namespace {

// Each frame from the server is "reached" (op host-callback, log-message or
// async-notification, u64 id, then its data), or registered memory's
// changes ahead of a reached host callback (op mirror-pull, flagged
// OUTPUT), which get no answer; each answer is "done" (the reached frame's
// op and id, flagged REPLY). What a callback waits for on the main
// connection is its own server's (`server`).
void serve(Socket s, uint32_t server) {
  Route route;
  route.to(server);
  protocol::Frame f;
  std::string why;
  for (;;) {
    switch (protocol::read_frame(s, &f, &why)) {
      // Not logged: the session closes it as the process exits, while the
      // logger may be being destroyed; a server gone early is reported by
      // the main connection.
      case protocol::ReadStatus::kClosed: return g_lost.store(true);
      case protocol::ReadStatus::kBad: return lose(why);
      case protocol::ReadStatus::kOk: break;
    }
    protocol::Reader r(f.payload);
    if (f.header.flags == protocol::kOutput && f.header.op == protocol::kOpMirrorPull) {
      if (!registered::apply_changes(r))
        return lose("the server sent changes of registered memory that this process does not have");
      continue;
    }
    const uint64_t id = r.u64();
    if (f.header.flags != 0 || !r.ok())
      return lose("the server sent a frame that is not a reached callback");
    if (std::string why_not = run_reached(f.header.op, id, r); !why_not.empty())
      return lose(why_not);
    protocol::FrameHeader done;
    done.op = f.header.op;
    done.flags = protocol::kReply;
    if (!protocol::write_frame(s, done, &id, sizeof id)) return lose("the connection broke");
  }
}

CUresult open_once(uint32_t server) {
  Route route;
  route.to(server);
  protocol::op::JoinPoint join;
  if (CUresult rc = ask<protocol::op::CallbackChannel>({}, &join); rc != CUDA_SUCCESS) {
    spdlog::error(
        "host callbacks cannot run: the server could not open a callback channel "
        "(CUresult {}; its log says why)",
        static_cast<int>(rc));
    return rc;
  }
  const std::string& name = join.name;
  const std::string& secret = join.secret;
  std::string error;
  Socket s = server_connection(server)->join(name, secret, &error);
  if (!s.valid()) {
    spdlog::error("host callbacks cannot run: the callback channel did not open: {}", error);
    return CUDA_ERROR_OPERATING_SYSTEM;
  }
  std::thread(serve, std::move(s), server).detach();
  return CUDA_SUCCESS;
}

}  // namespace

// Each server of the session has a channel of its own (servers.h), opened
// at its first host callback.
CUresult open_callback_channel() {
  static std::once_flag once[kMaxServers];
  static CUresult result[kMaxServers] = {};
  const uint32_t server = routed_server();
  if (server >= kMaxServers) return CUDA_ERROR_NOT_INITIALIZED;
  std::call_once(once[server], [server] { result[server] = open_once(server); });
  if (result[server] == CUDA_SUCCESS && g_lost.load()) return CUDA_ERROR_DEVICE_UNAVAILABLE;
  return result[server];
}

}  // namespace scuda::client
