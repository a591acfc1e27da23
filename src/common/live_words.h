// Live mirrors' word-by-word exchange (docs/managed-memory.md, "Live
// mirrors"): host memory that a kernel and a host thread use at once, as
// NCCL's proxies do, kept in step between its two copies while kernels run.
// A writer announces data with a flag or counter stored after it, at a
// higher address (NCCL's connection memory has its counters after its
// buffers, and its LL lines their flags after their data). So a side's
// changes are read from the highest word down, a flag before the data it
// announces, and written at the other side from the lowest word up, the
// data before its flag; each 8-byte word is read and written whole.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace scuda::live {

// A run of changed words: its address on the client and its bytes.
struct Run {
  uint64_t address;
  std::string bytes;
};

// Appends to `runs`, in ascending order, the words of [now, now + size)
// (the client's `address` onwards) that differ from `twin`, which is
// brought up to date: the other side is about to have them. Reads the
// highest word first. `address` and `size` are multiples of 8.
void take_changes(uint64_t address, const uint8_t* now, uint8_t* twin, size_t size,
                  std::vector<Run>* runs);

// Puts runs taken from several blocks, the highest block first, in
// ascending order, as a turn sends them.
void in_address_order(std::vector<Run>* runs);

// Writes the other side's bytes `bytes` (a whole number of words) at `at`,
// whose twin is `twin`, from the lowest word up, and brings the twin up to
// date. A word whose two halves both changed is stored whole; a half that
// the other side left as the twin has it is not stored. A word or half that
// a thread here wrote since the last exchange keeps this side's value,
// which travels on this side's next turn, as it likely came after the other
// side's (a kernel refilling a FIFO slot before the slot's reset arrives;
// docs/managed-memory.md, "What the order misses", says where this falls
// short).
void apply(uint8_t* at, uint8_t* twin, std::string_view bytes);

}  // namespace scuda::live
