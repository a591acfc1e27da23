// Lanes (docs/protocol.md, "Lanes"): more connections to the session that
// carry the bytes of large copies, so that a copy is not bound by what one
// TCP stream moves (on a fast link, one core's copying). They open in the
// background at the first copy large enough to use them, which goes on the
// connection meanwhile. SCUDA_LANES says how many (default 4; 1 turns them
// off). Stripe i of a copy crosses lane i % lanes, each lane moved by a
// thread of its own.
#pragma once

#include <cstddef>
#include <cstdint>

#include "protocol/ops.h"

namespace scuda::client::lanes {

// Smaller copies gain little: the lanes' threads must wake for them.
constexpr size_t kSmallest = 4 * protocol::kLaneStripe;

// How many lanes a copy of `size` bytes may take now: 0 for a small copy,
// and while lanes are not open (or never will be).
uint32_t usable(size_t size);

// With the connection's lock held, once the copy's request has gone out:
// sends the `size` bytes at `src` over `count` lanes, or reads them into
// `dst`, and returns once every stripe has crossed. false when a lane
// broke: then every lane closes and copies go on the connection.
bool send(const void* src, size_t size, uint32_t count);
bool receive(void* dst, size_t size, uint32_t count);

}  // namespace scuda::client::lanes
