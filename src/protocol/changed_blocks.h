// A pull that skips what the client already holds (page-pull-changed, op
// 306): the client sends a hash of each block of its own, possibly stale,
// copy; the server answers with a bitmap of the blocks whose device bytes
// hash differently, then those blocks' bytes in order. Device work often
// leaves most of a managed buffer as it was (the inputs of `c = a + b`), and
// such blocks then cost a hash on each side instead of the link's time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>

#include "protocol/codec.h"
#include "protocol/layout.h"

namespace scuda::protocol {

// XXH3-128 of each block: a collision between the host's and the device's
// bytes is as unlikely as a flipped bit that TCP's checksum misses.
constexpr size_t kBlockHashSize = 16;
constexpr uint32_t kMinHashBlock = 4096;
constexpr uint32_t kMaxHashBlock = 1u << 20;

// The blocks of `block` bytes that cover `size` bytes (the last may be short).
inline size_t block_count(size_t size, size_t block) { return (size + block - 1) / block; }
// The bytes of the bitmap of that many blocks.
inline size_t bitmap_bytes(size_t blocks) { return (blocks + 7) / 8; }

// Writes the hash of each block of the `size` bytes at `data` to `hashes`
// (block_count(size, block) * kBlockHashSize bytes).
void hash_blocks(const uint8_t* data, size_t size, size_t block, uint8_t* hashes);

// The request (op::PagePullChanged's).
struct ChangedPull {
  uint64_t address = 0;
  uint64_t size = 0;
  uint32_t block = 0;
  std::string_view hashes;  // the client's, kBlockHashSize each
  auto fields() { return std::tie(address, size, block, hashes); }
};

// The reply: a bit per block (set: changed), then the changed blocks'
// bytes in order, which the server sends from where they lie (write_head).
struct ChangedBlocks {
  std::string_view bitmap;
  std::string_view blocks;
  auto fields() { return std::tie(bitmap, blocks); }
};

// Encodes a request for the device bytes of `size` bytes at `address` whose
// blocks' hashes differ from those of the client's copy at `held`.
void write_changed_pull(Writer& w, uint64_t address, const uint8_t* held, size_t size,
                        uint32_t block);
// Checks an untrusted request: false unless `block` is a power of two in
// [kMinHashBlock, kMaxHashBlock], `size` is at most `max_size`, and there
// is one hash per block.
bool valid_changed_pull(const ChangedPull& req, size_t max_size);
// Decodes an untrusted request: false unless it decodes exactly and is valid.
bool read_changed_pull(Reader& in, size_t max_size, ChangedPull* out);

// The server's side: `data` holds the request's `size` device bytes; the
// blocks whose hash differs from the request's are moved, in order, to the
// front of `data`, and their bits set in `bitmap` (bitmap_bytes(...) bytes,
// zeroed by the caller). Returns the bytes kept.
size_t keep_changed(const ChangedPull& req, uint8_t* data, uint8_t* bitmap);

// The client's side: decodes an untrusted reply to a request for `size`
// bytes in blocks of `block` into `dst`, writing only the changed blocks.
// False (and why) unless the reply decodes exactly, with a bitmap of one
// bit per block and the bytes it announces; *changed is the bytes written.
bool read_changed(Reader& in, uint8_t* dst, size_t size, size_t block, size_t* changed,
                  std::string* error);

}  // namespace scuda::protocol
