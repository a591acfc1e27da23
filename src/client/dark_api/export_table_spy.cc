#include "client/dark_api/export_table_spy.h"

#include <sys/uio.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>

#include "client/dark_api/export_tables.h"
#include "common/lock_order.h"

namespace scuda::client {
namespace {

constexpr size_t kMaxTables = 12;
constexpr size_t kMaxSlots = 128;
using Slot = uint64_t (*)(uint64_t, uint64_t, uint64_t, uint64_t, uint64_t, uint64_t);

struct Spied {
  std::string name;
  std::array<Slot, kMaxSlots> real{};
  std::array<const void*, kMaxSlots> copy{};
};

std::array<Spied, kMaxTables>& spied() {
  static auto* t = new std::array<Spied, kMaxTables>;  // never destroyed: used during exit
  return *t;
}

// Reads a word at `p` without faulting if it is not an address.
bool peek(uint64_t p, uint64_t* word) {
  iovec local{word, sizeof *word};
  iovec remote{reinterpret_cast<void*>(p), sizeof *word};
  return p > 4096 && process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == sizeof *word;
}

std::string describe(uint64_t a) {
  uint64_t w = 0;
  return peek(a, &w) ? fmt::format("{:#x}->{:#x}", a, w) : fmt::format("{:#x}", a);
}

// The first 16 words at `a`, where it is an address.
std::string dump(uint64_t a) {
  std::string out;
  uint64_t w = 0;
  for (int i = 0; i < 16 && peek(a + 8 * static_cast<uint64_t>(i), &w); ++i)
    out += fmt::format(" {:x}", w);
  return out;
}

// Whether SCUDA_SPY_DUMP (tables' first eight hex digits, comma-separated)
// names the table: its slots' first four arguments are dumped before and
// after each call, for slots that fill in structures.
bool dumped_table(const std::string& name) {
  static const std::string list = [] {
    const char* v = std::getenv("SCUDA_SPY_DUMP");
    return std::string(v ? v : "");
  }();
  return !name.empty() && list.find(name) != std::string::npos;
}

// cuFFT's call of table 6e163fbe slot 7 hands the driver one of its own
// functions (third argument), which the driver calls back: the spy logs
// each call-back's arguments and the words they point to.
thread_local Slot g_callback = nullptr;

uint64_t spy_callback(uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4,
                      uint64_t a5) {
  spdlog::info("spy call-back ({}, {}, {}, {}, {}, {})", describe(a0), describe(a1), describe(a2),
               describe(a3), describe(a4), describe(a5));
  for (uint64_t a : {a0, a1, a2, a3}) spdlog::info("spy   {:#x}:{}", a, dump(a));
  const uint64_t r = g_callback(a0, a1, a2, a3, a4, a5);
  spdlog::info("spy call-back = {:#x}", r);
  return r;
}

// Before a spied slot's call: logs what the arguments point to where asked,
// and puts the call-back spy in place of cuFFT's function. Out of line, as
// after_slot is, so that each of the many spy_slot instances stays a call.
void before_slot(size_t t, size_t s, uint64_t* a) {
  if (s == 7 && spied()[t].name == "6e163fbe") {
    spdlog::info("spy 6e163fbe slot 7 before: {}:{} / {}:{}", describe(a[0]), dump(a[0]),
                 describe(a[1]), dump(a[1]));
    g_callback = reinterpret_cast<Slot>(a[2]);
    a[2] = reinterpret_cast<uint64_t>(&spy_callback);
  }
  if (dumped_table(spied()[t].name))
    for (int i = 0; i < 4; ++i) spdlog::info("spy   before {:#x}:{}", a[i], dump(a[i]));
}

void after_slot(size_t t, size_t s, const uint64_t* a, uint64_t r) {
  spdlog::info("spy {} slot {} ({}, {}, {}, {}) = {:#x}", spied()[t].name, s, describe(a[0]),
               describe(a[1]), describe(a[2]), describe(a[3]), r);
  if (dumped_table(spied()[t].name))
    for (int i = 0; i < 4; ++i) spdlog::info("spy   after {:#x}:{}", a[i], dump(a[i]));
}

// Arguments past the sixth (on the stack) are not passed on. The real slot
// is called through this catch-all type, whatever its own (which the spy
// does not know): UBSan's function check is off here for that call.
template <size_t T, size_t S>
SCUDA_NO_FUNCTION_CHECK uint64_t spy_slot(uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3,
                                          uint64_t a4, uint64_t a5) {
  uint64_t a[6] = {a0, a1, a2, a3, a4, a5};
  before_slot(T, S, a);
  const uint64_t r = spied()[T].real[S](a[0], a[1], a[2], a[3], a[4], a[5]);
  after_slot(T, S, a, r);
  return r;
}

template <size_t T, size_t... S>
constexpr std::array<Slot, kMaxSlots> slots_of(std::index_sequence<S...>) {
  return {&spy_slot<T, S>...};
}

template <size_t... T>
constexpr std::array<std::array<Slot, kMaxSlots>, kMaxTables> all_slots(std::index_sequence<T...>) {
  return {slots_of<T>(std::make_index_sequence<kMaxSlots>())...};
}

const std::array<std::array<Slot, kMaxSlots>, kMaxTables> kSpySlots =
    all_slots(std::make_index_sequence<kMaxTables>());

// Tables with a size word hold that many bytes; CONTEXT_LOCAL_STORAGE has
// none and ends at a NULL word.
size_t slot_count(const void* const* words, size_t* first) {
  const auto size = reinterpret_cast<uintptr_t>(words[0]);
  if (size < 4096) {
    *first = 1;
    return std::min<size_t>(size / sizeof(void*), kMaxSlots);
  }
  *first = 0;
  size_t n = 0;
  while (n < 16 && words[n] != nullptr) ++n;
  return n;
}

}  // namespace

bool spying_on_export_tables() {
  static const bool on = [] {
    const char* v = std::getenv("SCUDA_SPY_EXPORT_TABLES");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return on;
}

const void* spy_export_table(const CUuuid& id, const void* real) {
  namespace ids = export_table_id;
  if (real == nullptr || std::memcmp(&id, &ids::kIntegrityCheck, sizeof id) == 0 ||
      std::memcmp(&id, &ids::kCudartInterface, sizeof id) == 0) {
    return real;
  }
  static RankedMutex mutex{LockRank::kLeaf, "spy_export_table"};
  std::lock_guard lock(mutex);
  const std::string name = uuid_text(id).substr(0, 8);
  for (size_t t = 0; t < kMaxTables; ++t) {
    Spied& s = spied()[t];
    if (s.name == name) return s.copy.data();
    if (!s.name.empty()) continue;
    const auto* words = static_cast<const void* const*>(real);
    size_t first = 0;
    const size_t n = slot_count(words, &first);
    s.name = name;
    for (size_t i = 0; i < n; ++i) {
      s.copy[i] = words[i];
      if (i < first || words[i] == nullptr) continue;
      s.real[i] = reinterpret_cast<Slot>(const_cast<void*>(words[i]));
      s.copy[i] = reinterpret_cast<const void*>(kSpySlots[t][i]);
    }
    spdlog::info("spy: table {} has {} words", name, n);
    return s.copy.data();
  }
  return real;
}

}  // namespace scuda::client
