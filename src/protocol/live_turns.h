// Turns on the live mirrors' channel (docs/managed-memory.md, "Live
// mirrors"): each side's changed words as live-changes frames, the last
// flagged, in ascending order across the turn (common/live_words.h).
#pragma once

#include <string>
#include <vector>

#include "common/live_words.h"
#include "common/socket.h"
#include "protocol/op_layouts.h"

namespace scuda::protocol {

// Sends `runs` (ascending) as one turn; false when the connection failed.
bool send_turn(Socket& s, const std::vector<live::Run>& runs);

enum class TurnStatus { kOk, kClosed, kBad };

// Reads one turn into `runs`, in the order sent (a run longer than a frame
// comes in pieces); kBad, with *error saying why, for a frame that is not
// live-changes or a malformed one.
TurnStatus read_turn(Socket& s, std::vector<live::Run>* runs, std::string* error);

}  // namespace scuda::protocol
