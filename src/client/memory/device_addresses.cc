#include "client/memory/device_addresses.h"

#include <iterator>

namespace scuda::client {

void DeviceAddresses::add_range(uint64_t base, uint64_t size) {
  ranges_[base] = size;
  in_use_[base] = size;  // give_back frees it, merged with its neighbours
  give_back(base);
}

uint64_t DeviceAddresses::take(uint64_t size) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    if (it->second < size) continue;
    const uint64_t base = it->first;
    const uint64_t rest = it->second - size;
    free_.erase(it);
    if (rest) free_[base + size] = rest;
    in_use_[base] = size;
    return base;
  }
  return 0;
}

uint64_t DeviceAddresses::size_at(uint64_t base) const {
  auto it = in_use_.find(base);
  return it == in_use_.end() ? 0 : it->second;
}

void DeviceAddresses::give_back(uint64_t base) {
  auto used = in_use_.find(base);
  if (used == in_use_.end()) return;
  uint64_t start = base, size = used->second;
  in_use_.erase(used);
  auto next = free_.lower_bound(base);
  if (next != free_.end() && next->first == base + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == base) {
      start = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  free_[start] = size;
}

bool DeviceAddresses::in_use(uint64_t address) const {
  auto it = in_use_.upper_bound(address);
  if (it == in_use_.begin()) return false;
  --it;
  return address - it->first < it->second;
}

uint64_t DeviceAddresses::start() const { return ranges_.empty() ? 0 : ranges_.begin()->first; }

uint64_t DeviceAddresses::end() const {
  return ranges_.empty() ? 0 : ranges_.rbegin()->first + ranges_.rbegin()->second;
}

}  // namespace scuda::client
