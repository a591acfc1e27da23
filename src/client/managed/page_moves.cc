#include "client/managed/page_moves.h"

#include <sys/mman.h>

#include <spdlog/spdlog.h>

#include "client/stats.h"
#include "common/changed_runs.h"

namespace scuda::client::coherence::detail {
namespace {

// The bytes of a dirty page that differ from its twin.
void diff(uintptr_t page, const uint8_t* twin, std::vector<Run>& runs) {
  for_each_changed_run(reinterpret_cast<const uint8_t*>(page), twin, page_size(),
                       [&](size_t at, size_t n) { add_run(runs, page + at, n); });
}

// With both locks held: the dirty pages [i, j) of `s` become clean; their
// bytes that differ from their twins, or all of them where there is no
// twin, are added to `runs`. The run turns read-only before it is read, so
// that a write racing the push faults and dirties its page again.
void clean_run(uintptr_t base, Span& s, size_t i, size_t j, std::vector<Run>& runs) {
  protect(base + i * page_size(), j - i, PROT_READ);
  for (size_t k = i; k < j; ++k) {
    const uintptr_t page = base + k * page_size();
    if (auto twin = s.twins.find(k); twin != s.twins.end()) diff(page, twin->second.get(), runs);
    else add_run(runs, page, page_size());
    set_state(s, k, kClean);
  }
}

// A compared pull of kJudgedFrom bytes or more that finds less than this
// share of them unchanged leaves the next kPlainPulls pulls of its span
// uncompared. Smaller pulls hash little, and one that lies inside a
// stretch the device rewrote says little of the rest of the buffer.
constexpr size_t kJudgedFrom = 1u << 20;
constexpr size_t kUnchangedShare = 8;
constexpr uint8_t kPlainPulls = 8;

// With the lock held: `piece` (inside one span) is read into the client's
// writable view, compared with what the view holds unless its span's last
// comparison did not pay.
void aim(Run& piece) {
  const auto it = span_of(page_floor(piece.address));
  Span& s = it->second;
  piece.host = s.writable + (piece.address - it->first);
  piece.compare = s.plain_pulls == 0;
  if (s.plain_pulls > 0) --s.plain_pulls;
}

// With the lock held: what a compared pull found decides whether the next
// pulls of its span compare.
void learn(const Run& piece) {
  if (!piece.compare || piece.size < kJudgedFrom) return;
  Span& s = span_of(page_floor(piece.address))->second;
  s.plain_pulls = piece.unchanged < piece.size / kUnchangedShare ? kPlainPulls : 0;
}

// Where a page that is not readable yet gets its bytes from.
enum class Source { kDevice, kZeros, kArrived };

Source source_of(const Span& s, size_t i) {
  if (s.state[i] == kArrived) return Source::kArrived;
  return needs_fetch(s, i) ? Source::kDevice : Source::kZeros;
}

// With the lock held: page k, pulled ahead, becomes clean as of its pull.
void show_arrived(Span& s, size_t k) {
  const uint64_t pulled_at = s.clean_at[k];
  set_state(s, k, kClean);
  s.clean_at[k] = pulled_at;
}

}  // namespace

void add_run(std::vector<Run>& runs, uintptr_t address, size_t size) {
  if (!runs.empty() && address - (runs.back().address + runs.back().size) <= kMergeGap)
    runs.back().size = address + size - runs.back().address;
  else runs.push_back({address, size});
}

void clean_dirty(uintptr_t base, Span& s, size_t i, size_t end, std::vector<Run>& runs) {
  while (i < end && s.dirty) {
    if (s.state[i] != kDirty) {
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < end && s.state[j] == kDirty) ++j;
    clean_run(base, s, i, j, runs);
    i = j;
  }
}

void push_runs(Connection& conn, const std::vector<Run>& runs) {
  if (runs.empty()) return;
  in_program_context(conn);
  page_transfers::push(conn, allocated(runs));
}

void flush(Connection& conn) {
  Pages& p = pages();
  p.finished.clear();
  if (p.dirty == 0) return;
  std::vector<Run> runs;
  for (auto& [base, s] : p.spans) clean_dirty(base, s, 0, s.pages, runs);
  push_runs(conn, runs);
}

bool pull_into_view(Connection& conn, const std::vector<Run>& runs) {
  std::vector<Run> pieces = allocated(runs);
  for (Run& piece : pieces) aim(piece);
  in_program_context(conn);
  bool ok = false;
  {
    stats::Timed timed("managed: pull");
    ok = page_transfers::pull(conn, pieces);
  }
  for (const Run& piece : pieces) learn(piece);
  if (!ok)
    spdlog::error("managed memory: fetching {} runs from {:#x} failed; the host sees stale data",
                  runs.size(), runs.empty() ? 0 : runs.front().address);
  return ok;
}

bool pull(Connection& conn, const std::vector<Run>& runs) {
  const bool ok = pull_into_view(conn, runs);
  for (const Run& r : runs) protect(r.address, r.size / page_size(), PROT_READ);
  return ok;
}

void bring_in(Connection& conn, uintptr_t base, Span& s, size_t i, size_t count) {
  std::vector<Run> fetched;
  for (size_t end = i + count; i < end;) {
    if (!s.holds[i] || s.state[i] >= kZeroed) {
      ++i;
      continue;
    }
    const Source from = source_of(s, i);
    size_t j = i + 1;
    while (j < end && s.holds[j] && s.state[j] < kZeroed && source_of(s, j) == from) ++j;
    const uintptr_t address = base + i * page_size();
    if (from == Source::kDevice) fetched.push_back({address, (j - i) * page_size()});
    else protect(address, j - i, PROT_READ);
    for (size_t k = i; k < j; ++k) {
      if (from == Source::kArrived) show_arrived(s, k);
      else set_state(s, k, from == Source::kDevice ? kClean : kZeroed);
    }
    i = j;
  }
  if (!fetched.empty()) pull(conn, fetched);
}

}  // namespace scuda::client::coherence::detail
