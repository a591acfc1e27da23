// lz4 for the client's host<->device copies (docs/protocol.md,
// "Compression"): SCUDA_COMPRESS says off, auto or on; in auto, each chunk's
// choice follows the link's measured rate that way, and for a host-to-device
// chunk, a sample of its bytes. Functions here are called with the
// connection's lock held.
#pragma once

#include <cstddef>
#include <cstdint>

#include "client/transport/connection.h"
#include "common/compression.h"

namespace scuda::client::copy_compression {

// SCUDA_COMPRESS, read at the first copy ("auto" when unset), unless
// set_mode has changed it since.
compression::Mode mode();
void set_mode(compression::Mode mode);

// A host-to-device chunk as it goes on the wire: the caller's bytes, or an
// lz4 block of them (in memory that stays valid until the next chunk).
struct Chunk {
  bool compressed;
  const void* data;
  size_t size;
};
Chunk outgoing(const void* data, size_t size);

// Whether a host-to-device copy of `size` bytes might go compressed now,
// were its bytes to shrink well (then it takes no lanes); a probe of the
// link (compression::LinkRate) answers false.
bool may_compress_up(size_t size);
// Whether to ask the server to compress a device-to-host chunk of `size`
// bytes, which it does to each piece that shrinks.
bool ask_compressed(size_t size);
// Reads the reply to a device-to-host chunk asked for compressed into the
// `size` bytes at `dst`; an async one's is read later, as deliver_later's.
CUresult receive(Connection& conn, uint64_t id, void* dst, size_t size);
void deliver_later(Connection& conn, uint64_t id, void* dst, size_t size);

// The link's rate each way, for auto: a host-to-device chunk's `bytes` on
// the wire took `seconds` to leave (lz4's time is not in it); a
// device-to-host chunk received raw took `seconds` from the previous one's
// end to its own (the server's lz4 time would be, so compressed ones are not
// counted).
void sent(size_t bytes, double seconds);
void received_raw(size_t bytes, double seconds);

}  // namespace scuda::client::copy_compression
