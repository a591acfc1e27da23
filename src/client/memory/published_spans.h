// A set of address ranges that hot paths (every kernel launch) search
// without a lock: writers, under their own lock, publish a fresh sorted copy
// at each change, and readers take a snapshot.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

namespace scuda::client {

class PublishedSpans {
 public:
  using Spans = std::vector<std::pair<uintptr_t, uintptr_t>>;  // sorted [begin, end)

  // Replaces the set with `spans`, which must be sorted by begin and disjoint.
  void publish(Spans spans) {
    any_.store(!spans.empty(), std::memory_order_release);
    spans_.store(std::make_shared<const Spans>(std::move(spans)), std::memory_order_release);
  }
  // True when the set is not empty: one atomic load, for the common case.
  bool any() const { return any_.load(std::memory_order_acquire); }
  // The set as it is now; it stays valid while the caller holds it.
  std::shared_ptr<const Spans> snapshot() const { return spans_.load(std::memory_order_acquire); }
  // True when `address` lies in one of `spans`.
  static bool contains(const Spans& spans, uintptr_t address) {
    auto it = std::upper_bound(spans.begin(), spans.end(), std::make_pair(address, UINTPTR_MAX));
    return it != spans.begin() && address < std::prev(it)->second;
  }
  // Calls hit(word, offset) for each pointer-sized word of [bytes, bytes +
  // size), read at every 8-byte offset (packed kernel arguments), that lies
  // in the set as it is now.
  template <class Hit>
  void for_each_word_inside(const uint8_t* bytes, size_t size, Hit hit) const {
    if (!any()) return;
    const std::shared_ptr<const Spans> spans = snapshot();
    for (size_t off = 0; off + sizeof(uint64_t) <= size; off += sizeof(uint64_t)) {
      uint64_t word = 0;
      std::memcpy(&word, bytes + off, sizeof word);
      if (contains(*spans, word)) hit(word, off);
    }
  }

 private:
  std::atomic<std::shared_ptr<const Spans>> spans_{std::make_shared<const Spans>()};
  std::atomic<bool> any_{false};
};

}  // namespace scuda::client
