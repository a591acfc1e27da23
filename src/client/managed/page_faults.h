// The fault service's side of coherent_pages.h (fault_handler.h calls it):
// a fault on a managed page is served with the pages its sequential walk
// reads or writes ahead, and between faults the service pushes what walks
// wrote and pulls ahead of long reads.
#pragma once

#include <cstddef>
#include <cstdint>

namespace scuda::client::coherence::detail {

// Serves a fault at `address`: a read brings in the page and the pages its
// walk reads ahead, read-only; a write makes them writable as well, so that
// a sequential store faults once per window, not per page. False when the
// address is not a held managed page. Takes the connection's lock and
// pages().mu itself.
bool resolve(uintptr_t address, bool write);

// Runs on the fault service once a fault is served and none waits: pushes
// the runs walks wrote and moved past, then pulls the next window of a long
// sequential read. Takes the locks itself.
void background();

// With pages().mu held: walks that began in [base, base + size) are
// forgotten, so that memory allocated there later ramps up afresh.
void forget_walks(uintptr_t base, size_t size);

}  // namespace scuda::client::coherence::detail
