// A count of the requests that may have put work on the device, so that an
// answer about finished work can tell whether it still holds
// (finished_work.cc).
#pragma once

#include <cstdint>

namespace scuda::client {

// How many requests that may enqueue device work the process has sent.
uint64_t work_epoch();
// Counts one such request; called before it is sent.
void work_sent();
// Counts a graph launch, which may record any event.
void note_graph_launch();

}  // namespace scuda::client
