#include "common/live_words.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstring>
#include <limits>
#include <utility>

namespace scuda::live {

// store() splits a word into its low and high halves by address.
static_assert(std::endian::native == std::endian::little, "live words assume little-endian");

namespace {

constexpr size_t kWord = sizeof(uint64_t);
constexpr size_t kBlockWords = 4096 / kWord;
constexpr uint64_t kNone = std::numeric_limits<uint64_t>::max();
// Pairs of scans a snapshot tries before it settles for the last: a pair
// goes unconfirmed only when a thread here stores a word during it, and
// NCCL's threads store a few words, then wait for the other side.
constexpr int kTries = 8;
// A counter's line and its largest step between two turns: NCCL keeps at
// most 8 steps in flight, and a new operation rounds its base up a little.
constexpr uint64_t kLine = 128;
constexpr uint64_t kCounterStep = 1024;

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

// Changed words of one block, [first, end) in words, as scans found them.
using Spans = std::vector<std::pair<size_t, size_t>>;

// Reads words [from, size) of `b` from the highest down into the twin,
// noting those that differ in `spans`; the lowest such word's address, or
// kNone. 4 KiB that equal the twin are passed over with one comparison.
uint64_t scan_block(const Block& b, size_t from, Spans* spans) {
  uint64_t lowest = kNone;
  for (size_t end = b.size / kWord; end > from;) {
    const size_t start = std::max(from, end > kBlockWords ? end - kBlockWords : 0);
    if (std::memcmp(b.now + start * kWord, b.twin + start * kWord, (end - start) * kWord) != 0)
      for (size_t w = end; w-- > start;) {
        const uint64_t v = load(b.now + w * kWord);
        if (std::memcmp(&v, b.twin + w * kWord, kWord) == 0) continue;
        std::memcpy(b.twin + w * kWord, &v, kWord);
        if (!spans->empty() && spans->back().first == w + 1) spans->back().first = w;
        else spans->push_back({w, w + 1});
        lowest = b.address + w * kWord;
      }
    end = start;
  }
  return lowest;
}

// Scans every block's words at or above `from`, the highest first; the
// lowest changed word's address, or kNone.
uint64_t scan(std::span<Block> blocks, uint64_t from, std::vector<Spans>* spans) {
  uint64_t lowest = kNone;
  for (size_t i = blocks.size(); i-- > 0;) {
    const Block& b = blocks[i];
    if (b.address + b.size <= from) break;
    const size_t first = from > b.address ? (from - b.address) / kWord : 0;
    lowest = std::min(lowest, scan_block(b, first, &(*spans)[i]));
  }
  return lowest;
}

// Appends block `b`'s changed words, merged and in ascending order, with
// the values the twin now has.
void emit(Block& b, Spans& spans, std::vector<Run>* runs) {
  std::sort(spans.begin(), spans.end());
  for (size_t i = 0; i < spans.size();) {
    auto [first, end] = spans[i];
    for (++i; i < spans.size() && spans[i].first <= end; ++i) end = std::max(end, spans[i].second);
    runs->push_back({b.address + first * kWord,
                     std::string(reinterpret_cast<const char*>(b.twin + first * kWord),
                                 (end - first) * kWord)});
    b.changed = true;
  }
}

// Stores the other side's word `v` at `at`, whose twin is `twin`.
void store(uint8_t* at, uint8_t* twin, uint64_t v) {
  uint64_t had = 0;
  std::memcpy(&had, twin, kWord);
  const uint64_t changed = v ^ had;
  const bool low = (changed & 0xffffffffu) != 0, high = (changed >> 32) != 0;
  if (!(low && high && replace<uint64_t>(at, had, v))) {
    if (low) replace<uint32_t>(at, static_cast<uint32_t>(had), static_cast<uint32_t>(v));
    if (high)
      replace<uint32_t>(at + 4, static_cast<uint32_t>(had >> 32), static_cast<uint32_t>(v >> 32));
  }
  std::memcpy(twin, &v, kWord);
}

// Stores the words of landings[i] that are counters (or, with `counters`
// false, those that are not) and differ from the twin.
void store_landing(std::span<const Landing> landings, size_t i, bool counters) {
  const Landing& l = landings[i];
  const uint64_t next = i + 1 < landings.size() ? landings[i + 1].address : kNone;
  for (size_t off = 0; off + kWord <= l.bytes.size(); off += kWord) {
    uint64_t v = 0, had = 0;
    std::memcpy(&v, l.bytes.data() + off, kWord);
    std::memcpy(&had, l.twin + off, kWord);
    if (v == had) continue;
    const uint64_t address = l.address + off;
    const bool alone = off + kWord == l.bytes.size() && next >= address + kLine;
    if (is_counter(address, had, v, alone) == counters) store(l.at + off, l.twin + off, v);
  }
}

}  // namespace

void take_snapshot(std::span<Block> blocks, std::vector<Run>* runs) {
  // A scan from the top down reads a word after every word above it, so a
  // word it finds new comes with whatever was written before it below it;
  // what was written before it above it, the scan may have read too early.
  // Scanning again from the lowest new word up and finding nothing new
  // confirms the first scan; a whole scan that finds nothing new confirms
  // everything taken before it.
  std::vector<Spans> spans(blocks.size());
  for (int i = 0; i < kTries; ++i) {
    const uint64_t lowest = scan(blocks, 0, &spans);
    if (lowest == kNone || scan(blocks, lowest, &spans) == kNone) break;
  }
  for (size_t i = 0; i < blocks.size(); ++i) emit(blocks[i], spans[i], runs);
}

void apply_turn(std::span<const Landing> landings) {
  for (const bool counters : {false, true})
    for (size_t i = 0; i < landings.size(); ++i) store_landing(landings, i, counters);
}

bool is_counter(uint64_t address, uint64_t had, uint64_t v, bool alone) {
  return alone && address % kLine == 0 && v > had && v - had <= kCounterStep;
}

}  // namespace scuda::live
