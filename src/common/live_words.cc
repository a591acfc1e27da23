#include "common/live_words.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <thread>
#include <utility>

#include "common/fan_out.h"

namespace scuda::live {

// store() splits a word into its low and high halves by address.
static_assert(std::endian::native == std::endian::little, "live words assume little-endian");

namespace {

constexpr size_t kWord = sizeof(uint64_t);
constexpr size_t kBlockWords = 4096 / kWord;
constexpr size_t kPieceWords = (1 << 20) / kWord;  // ScanThreads' share of work
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

// Reads words [from, end) of `b` from the highest down into the twin,
// noting those that differ in `spans`; the lowest such word's address, or
// kNone. 4 KiB that equal the twin are passed over with one comparison.
uint64_t scan_words(const Block& b, size_t from, size_t end, Spans* spans) {
  uint64_t lowest = kNone;
  while (end > from) {
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
uint64_t scan(std::span<const Block> blocks, uint64_t from, std::vector<Spans>* spans) {
  uint64_t lowest = kNone;
  for (size_t i = blocks.size(); i-- > 0;) {
    const Block& b = blocks[i];
    if (b.address + b.size <= from) break;
    const size_t first = from > b.address ? (from - b.address) / kWord : 0;
    lowest = std::min(lowest, scan_words(b, first, b.size / kWord, &(*spans)[i]));
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

void take_snapshot(std::span<Block> blocks, std::vector<Run>* runs, ScanThreads* threads) {
  // A scan from the top down reads a word after every word above it, so a
  // word it finds new comes with whatever was written before it below it;
  // what was written before it above it, the scan may have read too early.
  // Scanning again down to the lowest new word and finding nothing new
  // confirms the first scan; a whole scan that finds nothing new confirms
  // everything taken before it. Threads scan their pieces in no order
  // across pieces, so with them every confirming scan is a whole one.
  std::vector<Spans> spans(blocks.size());
  auto scan_from = [&](uint64_t from) {
    return threads ? threads->scan(blocks, &spans) : scan(blocks, from, &spans);
  };
  for (int i = 0; i < kTries; ++i) {
    const uint64_t lowest = scan_from(0);
    if (lowest == kNone || scan_from(lowest) == kNone) break;
  }
  for (size_t i = 0; i < blocks.size(); ++i) emit(blocks[i], spans[i], runs);
}

struct ScanThreads::Job {
  struct Piece {
    size_t block, first, end;  // words [first, end) of blocks[block]
  };
  explicit Job(size_t n) : threads(n), fan(n, [this](size_t i) { work(i); }) {}
  void work(size_t i) {
    for (size_t p = i; p < pieces.size(); p += threads)
      lowest[p] = scan_words(blocks[pieces[p].block], pieces[p].first, pieces[p].end, &spans[p]);
  }
  const size_t threads;
  std::span<const Block> blocks;
  std::vector<Piece> pieces;
  std::vector<Spans> spans;  // each piece's
  std::vector<uint64_t> lowest;
  FanOut fan;  // last: its threads use the rest
};

ScanThreads::ScanThreads(size_t threads) : job_(std::make_unique<Job>(threads)) {}

uint64_t ScanThreads::scan(std::span<const Block> blocks, std::vector<Spans>* spans) {
  Job& j = *job_;
  j.blocks = blocks;
  j.pieces.clear();
  for (size_t b = 0; b < blocks.size(); ++b)
    for (size_t first = 0, words = blocks[b].size / kWord; first < words; first += kPieceWords)
      j.pieces.push_back({b, first, std::min(first + kPieceWords, words)});
  j.spans.assign(j.pieces.size(), {});
  j.lowest.assign(j.pieces.size(), kNone);
  j.fan.run(std::min(j.threads, j.pieces.size()));
  uint64_t lowest = kNone;
  for (size_t p = 0; p < j.pieces.size(); ++p) {
    Spans& to = (*spans)[j.pieces[p].block];
    to.insert(to.end(), j.spans[p].begin(), j.spans[p].end());
    lowest = std::min(lowest, j.lowest[p]);
  }
  return lowest;
}

ScanThreads* shared_scan_threads() {
  static ScanThreads* const threads = []() -> ScanThreads* {
    size_t n = std::min<size_t>(4, std::max(1u, std::thread::hardware_concurrency() / 2));
    if (const char* e = std::getenv("SCUDA_LIVE_SCAN_THREADS"); e && *e)
      n = std::clamp<size_t>(std::strtoul(e, nullptr, 10), 1, 64);
    // Never freed: its threads last until the process exits.
    return n > 1 ? new ScanThreads(n) : nullptr;
  }();
  return threads;
}

void apply_turn(std::span<const Landing> landings) {
  for (const bool counters : {false, true})
    for (size_t i = 0; i < landings.size(); ++i) store_landing(landings, i, counters);
}

bool is_counter(uint64_t address, uint64_t had, uint64_t v, bool alone) {
  return alone && address % kLine == 0 && v > had && v - had <= kCounterStep;
}

}  // namespace scuda::live
