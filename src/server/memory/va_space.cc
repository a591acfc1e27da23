#include "server/memory/va_space.h"

#include <iterator>

namespace scuda::server {

namespace {

// The entry of `ranges` that starts at or below `address`, or end().
auto at_or_below(const std::map<uint64_t, uint64_t>& ranges, uint64_t address) {
  auto it = ranges.upper_bound(address);
  return it == ranges.begin() ? ranges.end() : std::prev(it);
}

}  // namespace

void VaSpace::add_reservation(uint64_t base, uint64_t size, uint64_t granularity, int device) {
  reserved_[base] = size;
  owners_[base] = device;
  granularity_ = granularity;
}

int VaSpace::owner(uint64_t address) const {
  auto it = at_or_below(reserved_, address);
  if (it == reserved_.end() || address - it->first >= it->second) return -1;
  return owners_.at(it->first);
}

bool VaSpace::can_map(uint64_t base, uint64_t size) const {
  if (granularity_ == 0 || size == 0 || base % granularity_ || size % granularity_) return false;
  return inside_reservation(base, size) && !overlaps_mapping(base, size);
}

bool VaSpace::inside_reservation(uint64_t base, uint64_t size) const {
  auto it = at_or_below(reserved_, base);
  if (it == reserved_.end()) return false;
  const uint64_t offset = base - it->first;
  return offset < it->second && size <= it->second - offset;
}

bool VaSpace::overlaps_mapping(uint64_t base, uint64_t size) const {
  auto below = at_or_below(mapped_, base);
  if (below != mapped_.end() && base - below->first < below->second) return true;
  auto above = mapped_.upper_bound(base);
  return above != mapped_.end() && above->first - base < size;
}

void VaSpace::add_mapping(uint64_t base, uint64_t size) { mapped_[base] = size; }

uint64_t VaSpace::mapping_size(uint64_t base) const {
  auto it = mapped_.find(base);
  return it == mapped_.end() ? 0 : it->second;
}

bool VaSpace::mapping_holding(uint64_t address, uint64_t* base, uint64_t* size) const {
  auto it = at_or_below(mapped_, address);
  if (it == mapped_.end() || address - it->first >= it->second) return false;
  *base = it->first;
  *size = it->second;
  return true;
}

void VaSpace::remove_mapping(uint64_t base) { mapped_.erase(base); }

}  // namespace scuda::server
