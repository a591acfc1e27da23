// What the client's export tables (export_tables.cc,
// library_export_tables.cc) are built from: a table's words, a slot's
// function as a word, the size word, and slots nobody has described, each
// its own function so that the log names the table and slot a caller
// reached (docs/export-tables.md, "Failing stubs").
#pragma once

#include <cuda.h>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <utility>

#include <spdlog/spdlog.h>

#include "client/runtime.h"

namespace scuda::client::export_slots {

// A table of N words: the size word (where there is one), then the slots.
template <size_t N>
using Table = std::array<const void*, N>;

// Function `f` as a table word.
template <class F>
const void* fn(F* f) {
  return reinterpret_cast<const void*>(f);
}

// The size word of a table of `words` words: its size in bytes.
inline const void* size_word(size_t words) {
  return reinterpret_cast<const void*>(words * sizeof(void*));
}

// A slot nobody has described: each is its own function, so the log names
// the table (by its id's first word) and the slot a caller reached.
template <uint32_t TableId, size_t Slot>
CUresult CUDAAPI unknown_slot() {
  if (exiting()) return CUDA_ERROR_DEINITIALIZED;
  static std::atomic<bool> logged{false};
  if (!logged.exchange(true)) {
    spdlog::warn("export table {:08x} slot {} called: not supported", TableId, Slot);
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

// A table of N words whose every slot is its own unknown_slot.
template <uint32_t TableId, size_t N, size_t... Slot>
Table<N> unknown_slots(std::index_sequence<Slot...>) {
  Table<N> w = {fn(&unknown_slot<TableId, Slot>)...};
  w[0] = size_word(N);
  return w;
}

}  // namespace scuda::client::export_slots
