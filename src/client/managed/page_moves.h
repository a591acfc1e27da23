// Moving managed pages' bytes between the host and the device for
// coherent_pages.h: dirty pages pushed in runs, pages fetched into the
// client's writable view and then shown to the program. Each function
// expects both the connection's lock and pages().mu held.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "client/managed/page_table.h"
#include "client/transport/connection.h"

namespace scuda::client::coherence::detail {

// Adds [address, address + size) to `runs`, joined to the last run when the
// gap between them is small enough to send with it.
void add_run(std::vector<Run>& runs, uintptr_t address, size_t size);

// The dirty pages among [i, end) of `s` become
// clean, their bytes added to `runs`, one mprotect per run of them.
void clean_dirty(uintptr_t base, Span& s, size_t i, size_t end, std::vector<Run>& runs);

// Pushes `runs` (their parts inside live allocations) in the program's
// context.
void push_runs(Connection& conn, const std::vector<Run>& runs);

// Pushes every dirty page, in runs.
void flush(Connection& conn);

// Reads the device's copy of the pages of `runs` into their writable view,
// all pieces asked before the first is read; the program's view of them
// stays as it is. False (logged) if the transfer failed.
bool pull_into_view(Connection& conn, const std::vector<Run>& runs);

// pull_into_view, then the program may read the pages.
bool pull(Connection& conn, const std::vector<Run>& runs);

// Makes pages [i, i + count) of `s` clean, fetching those that need it,
// every run in one pipelined pull.
void bring_in(Connection& conn, uintptr_t base, Span& s, size_t i, size_t count);

}  // namespace scuda::client::coherence::detail
