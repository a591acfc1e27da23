// Device addresses the client hands out itself, in ranges the server
// reserved (docs/protocol.md, "Device memory"): first fit over a free
// list. Not thread-safe: its user holds a lock.
#pragma once

#include <cstdint>
#include <map>

namespace scuda::client {

class DeviceAddresses {
 public:
  void add_range(uint64_t base, uint64_t size);
  // The lowest free address with `size` bytes free after it, now in use; 0
  // when no range has room.
  uint64_t take(uint64_t size);
  // The size of the block in use at `base`, or 0 when none starts there.
  uint64_t size_at(uint64_t base) const;
  // Frees the block in use at `base`, merging it with free neighbours.
  void give_back(uint64_t base);
  // True when `address` lies in a block in use (taken, not given back).
  bool in_use(uint64_t address) const;
  // The start of the lowest range added, and the end of the highest; 0
  // without one.
  uint64_t start() const;
  uint64_t end() const;

 private:
  std::map<uint64_t, uint64_t> free_;    // base -> size, never adjacent
  std::map<uint64_t, uint64_t> in_use_;  // base -> size
  std::map<uint64_t, uint64_t> ranges_;  // base -> size, as added
};

}  // namespace scuda::client
