#include "common/live_words.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>

namespace scuda::live {

// apply() splits a word into its low and high halves by address.
static_assert(std::endian::native == std::endian::little, "live words assume little-endian");

namespace {

constexpr size_t kWord = sizeof(uint64_t);
constexpr size_t kBlockWords = 4096 / kWord;

// Loads and stores of whole words that the compiler neither splits, merges
// nor reorders with each other: the other thread is a kernel or a host
// thread of the program, reading or writing the same words.
uint64_t load(const uint8_t* p) {
  return std::atomic_ref<const uint64_t>(*reinterpret_cast<const uint64_t*>(p))
      .load(std::memory_order_acquire);
}

// Writes `v` where the word (or half) still holds `had`, the value this
// side last synchronized; false when a thread here wrote it meanwhile.
template <class T>
bool replace(uint8_t* p, T had, T v) {
  return std::atomic_ref<T>(*reinterpret_cast<T*>(p))
      .compare_exchange_strong(had, v, std::memory_order_acq_rel);
}

}  // namespace

void take_changes(uint64_t address, const uint8_t* now, uint8_t* twin, size_t size,
                  std::vector<Run>* runs) {
  const size_t first = runs->size();
  // Runs are found top down, each built backwards, then all put in order.
  size_t run_start = 0, run_end = 0;  // in words, run_end exclusive; empty when equal
  std::string backwards;
  auto close = [&] {
    if (run_start == run_end) return;
    std::string bytes(backwards.rbegin(), backwards.rend());
    runs->push_back({address + run_start * kWord, std::move(bytes)});
    backwards.clear();
    run_start = run_end = 0;
  };
  auto word = [&](size_t w) {
    const uint64_t v = load(now + w * kWord);
    uint64_t had = 0;
    __builtin_memcpy(&had, twin + w * kWord, kWord);
    if (v == had) return close();
    __builtin_memcpy(twin + w * kWord, &v, kWord);
    if (run_start == run_end) run_end = w + 1;
    run_start = w;
    // Bytes in reverse, so that reversing the run puts them in order.
    const auto* b = reinterpret_cast<const char*>(&v);
    for (size_t i = kWord; i-- > 0;) backwards.push_back(b[i]);
  };
  // Blocks that compare equal are passed over whole (most of a connection's
  // buffers, most of the time); only a block that differs is read word by
  // word, and only those reads' values travel, so the order holds.
  const size_t words = size / kWord;
  for (size_t block_end = words; block_end > 0;) {
    const size_t block_start = block_end > kBlockWords ? block_end - kBlockWords : 0;
    if (std::memcmp(now + block_start * kWord, twin + block_start * kWord,
                    (block_end - block_start) * kWord) == 0)
      close();
    else
      for (size_t w = block_end; w-- > block_start;) word(w);
    block_end = block_start;
  }
  close();
  std::reverse(runs->begin() + static_cast<std::ptrdiff_t>(first), runs->end());
}

void in_address_order(std::vector<Run>* runs) {
  std::sort(runs->begin(), runs->end(),
            [](const Run& a, const Run& b) { return a.address < b.address; });
}

void apply(uint8_t* at, uint8_t* twin, std::string_view bytes) {
  for (size_t off = 0; off + kWord <= bytes.size(); off += kWord) {
    uint64_t v = 0, had = 0;
    __builtin_memcpy(&v, bytes.data() + off, kWord);
    __builtin_memcpy(&had, twin + off, kWord);
    const uint64_t changed = v ^ had;
    if (changed == 0) continue;
    const bool low = (changed & 0xffffffffu) != 0, high = (changed >> 32) != 0;
    if (!(low && high && replace<uint64_t>(at + off, had, v))) {
      if (low) replace<uint32_t>(at + off, static_cast<uint32_t>(had), static_cast<uint32_t>(v));
      if (high)
        replace<uint32_t>(at + off + 4, static_cast<uint32_t>(had >> 32),
                          static_cast<uint32_t>(v >> 32));
    }
    __builtin_memcpy(twin + off, &v, kWord);
  }
}

}  // namespace scuda::live
