#include "protocol/changed_blocks.h"

#include <bit>
#include <cstring>
#include <vector>

#include "common/checksum.h"

namespace scuda::protocol {

namespace {

size_t block_size(size_t i, size_t size, size_t block) { return std::min(block, size - i * block); }

bool bit(const uint8_t* bitmap, size_t i) { return bitmap[i / 8] >> (i % 8) & 1; }

void hash_block(const uint8_t* data, size_t size, uint8_t* hash) {
  static_assert(sizeof(Checksum) == kBlockHashSize);
  std::memcpy(hash, checksum(data, size).data(), kBlockHashSize);
}

}  // namespace

void hash_blocks(const uint8_t* data, size_t size, size_t block, uint8_t* hashes) {
  for (size_t i = 0, n = block_count(size, block); i < n; ++i)
    hash_block(data + i * block, block_size(i, size, block), hashes + i * kBlockHashSize);
}

void write_changed_pull(Writer& w, uint64_t address, const uint8_t* held, size_t size,
                        uint32_t block) {
  std::vector<uint8_t> hashes(block_count(size, block) * kBlockHashSize);
  hash_blocks(held, size, block, hashes.data());
  write(w,
        ChangedPull{
            address, size, block, {reinterpret_cast<const char*>(hashes.data()), hashes.size()}});
}

bool valid_changed_pull(const ChangedPull& req, size_t max_size) {
  return req.size <= max_size && std::has_single_bit(req.block) && req.block >= kMinHashBlock &&
         req.block <= kMaxHashBlock &&
         req.hashes.size() == block_count(req.size, req.block) * kBlockHashSize;
}

bool read_changed_pull(Reader& in, size_t max_size, ChangedPull* out) {
  return read(in, out) && valid_changed_pull(*out, max_size);
}

size_t keep_changed(const ChangedPull& req, uint8_t* data, uint8_t* bitmap) {
  const auto* wanted = reinterpret_cast<const uint8_t*>(req.hashes.data());
  size_t kept = 0;
  for (size_t i = 0, n = block_count(req.size, req.block); i < n; ++i) {
    const size_t at = i * req.block, bytes = block_size(i, req.size, req.block);
    uint8_t hash[kBlockHashSize];
    hash_block(data + at, bytes, hash);
    if (std::memcmp(hash, wanted + i * kBlockHashSize, kBlockHashSize) == 0) continue;
    bitmap[i / 8] |= static_cast<uint8_t>(1u << (i % 8));
    if (kept != at) std::memmove(data + kept, data + at, bytes);
    kept += bytes;
  }
  return kept;
}

bool read_changed(Reader& in, uint8_t* dst, size_t size, size_t block, size_t* changed,
                  std::string* error) {
  const size_t n = block_count(size, block);
  ChangedBlocks reply;
  if (!read(in, &reply) || reply.bitmap.size() != bitmap_bytes(n)) {
    *error = "a changed-blocks reply that is not a bitmap and blocks";
    return false;
  }
  const auto* bitmap = reinterpret_cast<const uint8_t*>(reply.bitmap.data());
  size_t announced = 0;
  for (size_t i = 0; i < n; ++i)
    if (bit(bitmap, i)) announced += block_size(i, size, block);
  if (announced != reply.blocks.size()) {
    *error = "a changed-blocks reply whose bytes do not match its bitmap";
    return false;
  }
  const char* from = reply.blocks.data();
  for (size_t i = 0; i < n; ++i)
    if (bit(bitmap, i)) {
      const size_t bytes = block_size(i, size, block);
      std::memcpy(dst + i * block, from, bytes);
      from += bytes;
    }
  *changed = announced;
  return true;
}

}  // namespace scuda::protocol
