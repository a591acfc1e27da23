// Host pages that mirror the server's managed memory at the same addresses,
// kept coherent page by page (docs/managed-memory.md). A page is fresh
// (never used, reads as zeros), invalid (PROT_NONE: fetched on access),
// clean (read-only: equal to the device's copy when last fetched) or dirty
// (writable: the host changed it; a twin of its clean contents says which
// bytes). Dirty bytes are pushed before every request, so that device work
// sees them in order; after a synchronizing call the device may have written
// anything, so every valid page becomes invalid again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "client/transport/connection.h"

namespace scuda::client::coherence {

// Maps host pages over [base, base + size) at those very addresses; false
// when some page there is taken by something else of the process.
bool map(uintptr_t base, size_t size);
// Drops the allocation's hold on its pages; pages nothing holds are unmapped.
void unmap(uintptr_t base, size_t size);
// Before the server frees the allocation at `base`: no transfer reaches it
// any more (a window armed to be pulled ahead would otherwise be read from
// freed memory). unmap follows a free that succeeded, keep() one that failed.
void retire(uintptr_t base);
void keep(uintptr_t base, size_t size);

// With the connection's lock held, before any request: for a request that
// may start device work, pushes dirty bytes (ahead of the request) and,
// unless NoManagedWrites says otherwise, notes that the device may change
// managed memory. Registered
// host memory (registered_memory.h) is pushed and pulled from here too.
void before_request(Connection& conn, bool device_work);
// With the connection's lock held, after a synchronizing call returned:
// invalidates what the device may have changed and pulls the ranges
// prefetched to the host. `whole_context`: every stream is idle now.
void after_sync(Connection& conn, bool whole_context);

// For the requests this thread sends while one lives: their device work
// writes no managed memory (a copy into other memory), so the host's pages
// stay valid across them and no later write re-reads them.
class NoManagedWrites {
 public:
  NoManagedWrites();
  ~NoManagedWrites();
  NoManagedWrites(const NoManagedWrites&) = delete;
  NoManagedWrites& operator=(const NoManagedWrites&) = delete;

 private:
  bool outer_;
};
// For a copy on the device into [dst, dst + size), which the thread sends
// while one lives: a copy into other memory writes no managed memory
// (NoManagedWrites); one into managed memory makes the host's pages there
// stale once it is sent (device_wrote), after the request has pushed the
// host's dirty bytes of those pages, which the copy may not cover whole.
class DeviceCopyInto {
 public:
  DeviceCopyInto(uintptr_t dst, size_t size);
  ~DeviceCopyInto();
  DeviceCopyInto(const DeviceCopyInto&) = delete;
  DeviceCopyInto& operator=(const DeviceCopyInto&) = delete;

 private:
  uintptr_t managed_ = 0;  // the copy's range when it is managed memory
  size_t size_ = 0;
  std::optional<NoManagedWrites> confined_;
};

// Without the connection's lock: whether [address, address + size) meets
// managed memory.
bool is_managed(uintptr_t address, size_t size);

// Without the connection's lock: the device wrote [address, address + size)
// (a copy into managed memory), so the host's pages there are stale now.
void device_wrote(uintptr_t address, size_t size);
// Counts coherence bytes moved for registered memory, with managed memory's.
void count_traffic(uint64_t pushed, uint64_t pulled);

// The host's page size.
size_t page_size();
// Without the connection's lock: cuMemPrefetchAsync to the host; the range
// is pulled in bulk at the next synchronizing call.
void want_on_host(uintptr_t address, size_t size);
// Without the connection's lock: cuMemAdvise's preferred location for
// [address, address + size) is the host (`on`) or not. Such ranges are
// pulled whole at each synchronizing call that finds device work done, as
// pages that stay on the host are read there natively.
void prefer_host(uintptr_t address, size_t size, bool on);

}  // namespace scuda::client::coherence
