#include "server/memory/live_channel.h"

#include <thread>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/process_wide.h"
#include "protocol/live_turns.h"

namespace scuda::server {

bool LiveChannel::open(HostMirrors* mirrors, std::string* name, std::string* secret,
                       std::string* error) {
  mirrors_ = mirrors;
  return join_.open(
      "live-mirrors", [this](Socket client) { return take(std::move(client)); }, name, secret,
      error);
}

bool LiveChannel::take(Socket client) {
  if (!acknowledge_join(client)) return false;
  spdlog::info("live mirrors' channel joined");
  std::thread([this, s = std::move(client)]() mutable { serve(std::move(s)); }).detach();
  return true;
}

// Turns until the client goes: its words into the mirrors, then the
// device's back.
void LiveChannel::serve(Socket client) {
  std::string error;
  for (;;) {
    std::vector<live::Run> runs;
    protocol::TurnStatus got = protocol::read_turn(client, &runs, &error);
    if (got == protocol::TurnStatus::kClosed) return;
    if (got == protocol::TurnStatus::kOk && !mirrors_->write_live(runs)) {
      error = "live-changes names words outside every live mirror";
      got = protocol::TurnStatus::kBad;
    }
    if (got == protocol::TurnStatus::kBad) {
      spdlog::warn("live mirrors' channel closed: {}", error);
      return;
    }
    runs.clear();
    mirrors_->take_live_changes(&runs);
    if (!protocol::send_turn(client, runs)) return;
  }
}

LiveChannel& live_channel() { return scuda::process_wide<LiveChannel>(); }

}  // namespace scuda::server
