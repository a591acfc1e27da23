// A token's device memory cap (docs/architecture.md, "Tokens and the
// admission queue"): the session replaces its driver table's allocating and
// freeing entry points with ones that count the memory its allocations hold,
// so that every path that takes device memory is counted, generated handlers
// and hand-written ones (client-placed allocations) alike, arrays and the
// allocation nodes of instantiated graphs too. An allocation that
// would take the token's sessions past the cap fails with
// CUDA_ERROR_OUT_OF_MEMORY and a log line naming the token and its cap.
#pragma once

#include <cstdint>
#include <string>

#include "common/driver_table.h"
#include "server/status/session_table.h"

namespace scuda::server {

struct MemoryQuota {
  std::string token;              // the token's name, for the log line
  uint64_t cap = 0;               // bytes across the token's sessions; 0: none
  SessionTable* table = nullptr;  // where the token's other sessions count theirs; may be null
  SessionSlot* slot = nullptr;    // where this session counts its own; may be null
};

// Session, once, after the driver is loaded: counts every allocation through
// `driver` against `quota` (nothing changes when it has no cap).
void enforce_memory_quota(DriverTable* driver, MemoryQuota quota);

}  // namespace scuda::server
