#include "client/memory/small_allocations.h"

#include <bit>
#include <iterator>

namespace scuda::client {

void SmallAllocations::set_chunk_size(uint64_t size) {
  chunk_size_ = size;
  classes_.resize(std::bit_width(size / 2 / kMinSlot));
}

bool SmallAllocations::serves(uint64_t size) const {
  return size > 0 && !classes_.empty() && size <= chunk_size_ / 2;
}

unsigned SmallAllocations::class_of(uint64_t size) {
  return size <= kMinSlot ? 0 : std::bit_width((size - 1) / kMinSlot);
}

std::map<uint64_t, SmallAllocations::Chunk>::iterator SmallAllocations::chunk_of(uint64_t address) {
  return std::prev(chunks_.upper_bound(address));
}

uint64_t SmallAllocations::take(uint64_t size) {
  SizeClass& c = classes_[class_of(size)];
  if (c.free.empty()) return 0;
  const uint64_t slot = c.free.back();
  c.free.pop_back();
  auto chunk = chunk_of(slot);
  if (chunk->second.slots_in_use++ == 0) c.idle_chunks.erase(chunk->first);
  in_use_.insert(slot);
  return slot;
}

void SmallAllocations::add_chunk(uint64_t base, uint64_t size) {
  const unsigned size_class = class_of(size);
  SizeClass& c = classes_[size_class];
  chunks_[base] = Chunk{size_class};
  c.idle_chunks.insert(base);
  const uint64_t slot = slot_size(size_class);
  for (uint64_t offset = chunk_size_ / slot * slot; offset >= slot; offset -= slot)
    c.free.push_back(base + offset - slot);
}

uint64_t SmallAllocations::give_back(uint64_t base) {
  if (in_use_.erase(base) == 0) return 0;
  auto chunk = chunk_of(base);
  SizeClass& c = classes_[chunk->second.size_class];
  c.free.push_back(base);
  if (--chunk->second.slots_in_use > 0) return 0;
  const uint64_t chunk_base = chunk->first;
  if (c.idle_chunks.empty()) {
    c.idle_chunks.insert(chunk_base);
    return 0;
  }
  drop_chunk(chunk_base, c);
  return chunk_base;
}

void SmallAllocations::drop_chunk(uint64_t base, SizeClass& c) {
  std::erase_if(c.free, [&](uint64_t slot) { return slot - base < chunk_size_; });
  chunks_.erase(base);
}

}  // namespace scuda::client
