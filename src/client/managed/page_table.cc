#include "client/managed/page_table.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "client/state.h"
#include "client/stats.h"

namespace scuda::client::coherence::detail {

std::atomic<uint64_t> g_context{0};

void in_program_context(Connection& conn) {
  if (const uint64_t id = g_context.load(std::memory_order_relaxed)) conn.sync_context(id);
}

Pages& pages() { return client_state().page_table.get(); }

void protect(uintptr_t address, size_t pages, int prot) {
  stats::Timed timed("managed: mprotect");
  if (mprotect(reinterpret_cast<void*>(address), pages * page_size(), prot) != 0)
    spdlog::error("managed memory: mprotect of {:#x} failed: {}", address, std::strerror(errno));
}

std::vector<Run> allocated(uintptr_t address, size_t size) {
  std::vector<Run> out;
  const auto& allocs = pages().allocations;
  auto it = allocs.upper_bound(address);
  if (it != allocs.begin()) --it;
  const uintptr_t end = address + size;
  for (; it != allocs.end() && it->first < end; ++it) {
    const uintptr_t from = std::max(address, it->first);
    const uintptr_t to = std::min(end, it->first + it->second);
    if (from < to) out.push_back({from, to - from});
  }
  return out;
}

std::map<uintptr_t, Span>::iterator span_of(uintptr_t page) {
  auto& spans = pages().spans;
  auto it = spans.upper_bound(page);
  if (it == spans.begin()) return spans.end();
  --it;
  return page < it->first + it->second.pages * page_size() ? it : spans.end();
}

void set_state(Span& s, size_t i, State to) {
  const State from = static_cast<State>(s.state[i]);
  s.dirty += (to == kDirty) - (from == kDirty);
  pages().dirty += (to == kDirty) - (from == kDirty);
  s.kept += (to >= kArrived) - (from >= kArrived);
  if (from == kDirty) s.twins.erase(i);
  if (to == kClean || to == kZeroed) s.clean_at[i] = pages().epoch;
  s.state[i] = to;
}

std::vector<Run> allocated(const std::vector<Run>& runs) {
  std::vector<Run> out;
  for (const Run& run : runs)
    for (const Run& piece : allocated(run.address, run.size)) out.push_back(piece);
  return out;
}

void invalidate(Span& s, uintptr_t base, size_t i, size_t count) {
  for (size_t end = i + count; i < end;) {
    if (s.state[i] < kZeroed) {
      if (s.state[i] != kInvalid) set_state(s, i, kInvalid);
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < end && s.state[j] >= kZeroed) ++j;
    protect(base + i * page_size(), j - i, PROT_NONE);
    for (size_t k = i; k < j; ++k) set_state(s, k, kInvalid);
    i = j;
  }
}

}  // namespace scuda::client::coherence::detail
