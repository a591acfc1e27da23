// The device address ranges a session reserved for its client to place
// allocations in (kOpVaReserve), and what is mapped in them (kOpVaMap). The
// client chooses every address; this checks each against what the session
// holds before the driver sees it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

namespace scuda::server {

class VaSpace {
 public:
  // At most this many ranges per session: a client that keeps reserving is
  // refused rather than served until the address space runs out.
  static constexpr size_t kMaxReservations = 64;

  bool full() const { return reserved_.size() >= kMaxReservations; }
  // The allocation granularity that mappings must be multiples of; 0 before
  // the first reservation.
  uint64_t granularity() const { return granularity_; }
  // A range reserved for the memory of device `device` (each device has
  // ranges of its own: the client places a device's allocations in them).
  void add_reservation(uint64_t base, uint64_t size, uint64_t granularity, int device);
  // The device whose reservation holds `address`; -1 when none does.
  int owner(uint64_t address) const;

  // True when [base, base + size) may be mapped: non-empty, aligned to the
  // granularity, inside one reservation and clear of every mapping.
  bool can_map(uint64_t base, uint64_t size) const;
  void add_mapping(uint64_t base, uint64_t size);
  // The size of the mapping that starts at `base`, or 0 when none does.
  uint64_t mapping_size(uint64_t base) const;
  // The mapping that holds `address`: false when none does.
  bool mapping_holding(uint64_t address, uint64_t* base, uint64_t* size) const;
  void remove_mapping(uint64_t base);

 private:
  bool inside_reservation(uint64_t base, uint64_t size) const;
  bool overlaps_mapping(uint64_t base, uint64_t size) const;

  uint64_t granularity_ = 0;
  std::map<uint64_t, uint64_t> reserved_;  // base -> size
  std::map<uint64_t, int> owners_;         // base -> device, of each reservation
  std::map<uint64_t, uint64_t> mapped_;    // base -> size
};

}  // namespace scuda::server
