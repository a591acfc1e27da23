// Device allocations smaller than the VMM granularity, carved by the client
// from chunks of the granularity that it maps like any other allocation
// (docs/protocol.md, "Device memory"). Each chunk serves one size class, a
// power of two from kMinSlot bytes to half a chunk, split into equal slots;
// a slot is aligned to its size. Bookkeeping only: its user maps and unmaps
// the chunks, and holds a lock.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <vector>

namespace scuda::client {

class SmallAllocations {
 public:
  // cudaMalloc promises 256-byte alignment; slots keep twice that.
  static constexpr uint64_t kMinSlot = 512;

  // The chunks' size: the granularity, a power of two. Until it is set, or
  // when it is under 2 * kMinSlot, nothing is served.
  void set_chunk_size(uint64_t size);
  // True when allocations of `size` bytes are carved here: 1 to half a chunk.
  bool serves(uint64_t size) const;

  // A free slot for `size` bytes (served here), now in use; 0 when its class
  // has none: the caller maps a chunk for add_chunk and asks again.
  uint64_t take(uint64_t size);
  // A mapped chunk at `base`, split into slots for `size`'s class.
  void add_chunk(uint64_t base, uint64_t size);
  // True when a slot in use starts at `base`.
  bool in_use(uint64_t base) const { return in_use_.contains(base); }
  // True when a chunk starts at `base`.
  bool chunk_at(uint64_t base) const { return chunks_.contains(base); }
  // Frees the slot in use at `base`. Returns the base of a chunk now
  // forgotten, for the caller to unmap: this slot's, when none of its slots
  // is in use and its class has another such chunk (one spare is kept per
  // class, so that a slot freed and asked for again costs no map); else 0.
  uint64_t give_back(uint64_t base);

 private:
  struct Chunk {
    unsigned size_class;
    uint64_t slots_in_use = 0;
  };
  struct SizeClass {
    std::vector<uint64_t> free;      // slots, the next to hand out last
    std::set<uint64_t> idle_chunks;  // bases of chunks with no slot in use
  };

  static unsigned class_of(uint64_t size);
  static uint64_t slot_size(unsigned size_class) { return kMinSlot << size_class; }
  // The chunk holding `address`, a slot's.
  std::map<uint64_t, Chunk>::iterator chunk_of(uint64_t address);
  void drop_chunk(uint64_t base, SizeClass& c);

  uint64_t chunk_size_ = 0;
  std::vector<SizeClass> classes_;
  std::map<uint64_t, Chunk> chunks_;  // base -> chunk
  std::set<uint64_t> in_use_;         // bases of slots in use
};

}  // namespace scuda::client
