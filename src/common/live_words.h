// Live mirrors' word-by-word exchange (docs/managed-memory.md, "Live
// mirrors"): host memory that a kernel and a host thread use at once, as
// NCCL's proxies do, kept in step between its two copies while kernels run.
// A side sends its changed words as one snapshot: a state its own threads'
// writes passed through, so that no word travels without the words written
// before it. The other side writes them from the lowest word up, counters
// last, so that its threads never see a counter before what it announces.
// Each 8-byte word is read and written whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace scuda::live {

// A run of changed words: its address on the client and its bytes.
struct Run {
  uint64_t address;
  std::string bytes;
};

// A live block as one side holds it: its address on the client, its bytes
// here, and its twin (what the other side has, as far as this side knows).
struct Block {
  uint64_t address;
  const uint8_t* now;
  uint8_t* twin;
  size_t size;           // a multiple of 8, as `address` is
  bool changed = false;  // set by take_snapshot when a word of it travels
};

class ScanThreads;

// Appends to `runs`, in ascending order, the words of `blocks` (ascending,
// disjoint) that differ from their twins, and brings the twins up to date:
// the other side is about to have them. The words are a snapshot: when a
// thread here wrote word A and then word B, and B travels, A travels too
// (or was sent before), whatever their addresses. `threads`, if given,
// share the scans.
void take_snapshot(std::span<Block> blocks, std::vector<Run>* runs, ScanThreads* threads = nullptr);

// Threads that share take_snapshot's scans, each taking pieces of 1 MiB
// of the blocks: a side's live blocks are tens of megabytes, and each turn
// compares them all. For one take_snapshot at a time; never destroyed (its
// threads last until the process exits).
class ScanThreads {
 public:
  explicit ScanThreads(size_t threads);
  ScanThreads(const ScanThreads&) = delete;
  ScanThreads& operator=(const ScanThreads&) = delete;
  // Its threads wait on its state until the process exits.
  ~ScanThreads() = delete;

  // Scans every word of `blocks`, the changed ones into their twins and
  // `spans` (a list per block, of [first, end) in words); the lowest
  // changed word's address, or UINT64_MAX.
  uint64_t scan(std::span<const Block> blocks,
                std::vector<std::vector<std::pair<size_t, size_t>>>* spans);

 private:
  struct Job;
  std::unique_ptr<Job> job_;
};

// The process's ScanThreads, made at the first call with
// SCUDA_LIVE_SCAN_THREADS threads, or half the cores up to 4; nullptr when
// that is 1 (the turn's own thread scans alone). Callers of take_snapshot
// with it take turns (their live blocks' lock).
ScanThreads* shared_scan_threads();

// Where a received run lands here: `at` holds the bytes of the client's
// `address` onwards, `twin` their twin.
struct Landing {
  uint64_t address;
  uint8_t* at;
  uint8_t* twin;
  std::string_view bytes;  // a whole number of words
};

// Writes one turn's runs (ascending, as take_snapshot gives them) and brings
// the twins up to date: every word but the counters from the lowest up, then
// the counters from the lowest up (is_counter). A word whose two halves both
// changed is stored whole; a half that the other side left as the twin has
// it is not stored. A word or half that a thread here wrote since the last
// exchange keeps this side's value, which travels on this side's next turn,
// as it likely came after the other side's.
void apply_turn(std::span<const Landing> landings);

// Whether the word at `address`, going from `had` to `v`, looks like a
// counter that announces other words: it starts a 128-byte line (NCCL puts
// its head and tail counters alone each in a line), grew by a small step,
// and `alone` says no other word of its line changed in the turn.
bool is_counter(uint64_t address, uint64_t had, uint64_t v, bool alone);

}  // namespace scuda::live
