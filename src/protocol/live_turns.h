// Turns on the live mirrors' channel (docs/managed-memory.md, "Live
// mirrors"): each side's changed words as live-changes frames, the last
// flagged, in ascending order across the turn (common/live_words.h).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/live_words.h"
#include "common/socket.h"
#include "protocol/op_layouts.h"

namespace scuda::protocol {

// Sends `runs` (ascending) as one turn; false when the connection failed.
bool send_turn(Socket& s, const std::vector<live::Run>& runs);

enum class TurnStatus { kOk, kClosed, kBad };

// Reads one turn, handing each run to `apply` in the order sent; kBad, with
// *error saying why, for a frame that is not live-changes, a malformed one,
// or a run that `apply` refuses.
TurnStatus read_turn(Socket& s, const std::function<bool(const op::ChangedRun&)>& apply,
                     std::string* error);

}  // namespace scuda::protocol
