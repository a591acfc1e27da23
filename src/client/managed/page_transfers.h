// The transport under page_moves.cc: runs of managed pages between the
// client's host copy and the device's, in large frames on the connection
// (ops 300 and 301) or, for runs the lanes gain on, over the lanes. Every
// transfer is ordered with the requests around it, as a synchronous copy on
// the legacy stream is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "client/transport/connection.h"

namespace scuda::client::page_transfers {

// Bytes at `address`, inside one live allocation; on the client they are
// at `host` when it is set (managed memory's writable view), else at
// `address`. A pull with `compare` moves only the blocks whose device bytes
// differ from the client's (protocol/changed_blocks.h), and says in
// `unchanged` how many bytes it found the client already held.
struct Range {
  uintptr_t address;
  size_t size;
  uint8_t* host = nullptr;
  bool compare = false;
  size_t unchanged = 0;

  void* client_bytes() const {
    return host ? static_cast<void*>(host) : reinterpret_cast<void*>(address);
  }
};

// With the connection's lock held: writes the host's bytes of `ranges` into
// the device's copy, ahead of any later request.
void push(Connection& conn, std::span<const Range> ranges);
// With the connection's lock held: reads the device's copy of `ranges` into
// their client bytes (writable), every piece asked before the first is
// read, and sets each range's `unchanged`; false when some piece failed.
bool pull(Connection& conn, std::span<Range> ranges);

}  // namespace scuda::client::page_transfers
