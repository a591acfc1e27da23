#include "server/callbacks/callback_channel.h"

#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "common/process_wide.h"
#include "protocol/codec.h"
#include "protocol/frame_io.h"
#include "protocol/op_layouts.h"
#include "protocol/ops.h"

namespace scuda::server {

bool CallbackChannel::open(std::string* name, std::string* secret, std::string* error) {
  return join_.open(
      "callbacks", [this](Socket client) { return take(std::move(client)); }, name, secret, error);
}

bool CallbackChannel::take(Socket client) {
  std::lock_guard lock(mu_);
  if (!acknowledge_join(client)) return false;
  socket_ = std::move(client);
  spdlog::info("callback channel joined");
  return true;
}

void CallbackChannel::reached(uint64_t id) {
  std::lock_guard lock(mu_);
  if (!socket_.valid()) return;
  // The changes go ahead, as output named mirror-pull, a window a frame, as
  // they do ahead of a synchronizing reply on the main connection. They are
  // taken first and written after the mirrors' lock is let go: the client
  // applies them under its own registry lock, which its main thread may
  // hold while it waits for the session, which may wait for that lock.
  std::vector<protocol::Writer> windows;
  if (mirrors_)
    mirrors_->take_window_changes(true, [&](protocol::Writer window) {
      windows.push_back(std::move(window));
      return true;
    });
  protocol::FrameHeader changes;
  changes.op = protocol::kOpMirrorPull;
  changes.flags = protocol::kOutput;
  for (const protocol::Writer& window : windows)
    if (!protocol::write_frame(socket_, changes, window.data().data(), window.size()))
      return lose(true, "the client closed it");
  protocol::Writer w;
  w.u64(id);
  run_on_client(protocol::kOpHostCallback, id, w);
}

void CallbackChannel::log_message(uint64_t id, CUlogLevel level, std::string_view message) {
  std::lock_guard lock(mu_);
  if (!socket_.valid()) return;
  protocol::Writer w;
  w.u64(id);
  w.u32(static_cast<uint32_t>(level));
  w.str(message);
  run_on_client(protocol::kOpLogMessage, id, w);
}

void CallbackChannel::notification(uint64_t id, const CUasyncNotificationInfo& info) {
  std::lock_guard lock(mu_);
  if (!socket_.valid()) return;
  protocol::Writer w;
  w.u64(id);
  w.put(info);
  run_on_client(protocol::kOpAsyncNotification, id, w);
}

void CallbackChannel::run_on_client(uint32_t op, uint64_t id, const protocol::Writer& w) {
  protocol::FrameHeader h;
  h.op = op;
  if (!protocol::write_frame(socket_, h, w.data().data(), w.size()))
    return lose(true, "the client closed it");
  protocol::Frame f;
  std::string error;
  switch (protocol::read_frame(socket_, &f, &error)) {
    case protocol::ReadStatus::kClosed: return lose(true, "the client closed it");
    case protocol::ReadStatus::kBad: return lose(false, error);
    case protocol::ReadStatus::kOk: break;
  }
  protocol::Reader r(f.payload);
  if (f.header.op != op || f.header.flags != protocol::kReply || r.u64() != id || !r.done())
    lose(false, fmt::format("the client did not answer callback {} with its \"done\"", id));
}

void CallbackChannel::lose(bool client_left, const std::string& why) {
  if (client_left)
    spdlog::info("callback channel closed ({}): later host callbacks return at once", why);
  else spdlog::warn("callback channel closed: {}; later host callbacks return at once", why);
  socket_.close();
}

CallbackChannel& callback_channel() { return scuda::process_wide<CallbackChannel>(); }

void CUDA_CB host_function_reached(void* id) {
  callback_channel().reached(reinterpret_cast<uintptr_t>(id));
}

void CUDA_CB log_callback_reached(void* id, CUlogLevel level, char* message, size_t length) {
  callback_channel().log_message(reinterpret_cast<uintptr_t>(id), level,
                                 std::string_view(message ? message : "", message ? length : 0));
}

void CUDA_CB async_notification_reached(CUasyncNotificationInfo* info, void* id,
                                        CUasyncCallbackHandle) {
  if (info) callback_channel().notification(reinterpret_cast<uintptr_t>(id), *info);
}

}  // namespace scuda::server
