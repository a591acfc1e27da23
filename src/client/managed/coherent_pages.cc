#include "client/managed/coherent_pages.h"
#include "client/memory/live_mirrors.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <vector>

#include "client/contexts/context.h"
#include "client/managed/fault_handler.h"
#include "client/managed/managed_views.h"
#include "client/managed/page_faults.h"
#include "client/managed/page_moves.h"
#include "client/managed/page_table.h"
#include "client/memory/registered_memory.h"
#include "client/pools/route.h"

namespace scuda::client::coherence {

size_t page_size() {
  static const size_t n = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return n;
}

// The parts' shared state and helpers (page_table.h, page_moves.h,
// page_faults.h) are this file's to use throughout.
using namespace detail;

namespace {

std::atomic<bool> g_any{false};  // has managed memory ever been mapped?
// Set on a thread while it sends a request whose device work writes no
// managed memory (NoManagedWrites).
thread_local bool t_no_managed_writes = false;
// Page data moved so far (scuda_page_traffic).
std::atomic<uint64_t> g_pushed{0};
std::atomic<uint64_t> g_pulled{0};

// With the lock held: [address, address + size) leaves the ranges advised
// to live on the host; the parts of them outside it stay.
void forget_preferred(uintptr_t address, size_t size) {
  auto& ranges = pages().host_preferred;
  const uintptr_t end = address + size;
  auto it = ranges.upper_bound(address);
  if (it != ranges.begin()) --it;
  while (it != ranges.end() && it->first < end) {
    const uintptr_t from = it->first, to = it->first + it->second;
    if (to <= address) {
      ++it;
      continue;
    }
    it = ranges.erase(it);
    if (from < address) ranges[from] = address - from;
    if (to > end) ranges[end] = to - end;
  }
}

// The runs of [first, end) that no span covers.
std::vector<Run> gaps(uintptr_t first, uintptr_t end) {
  std::vector<Run> out;
  for (uintptr_t page = first; page < end;) {
    if (auto it = span_of(page); it != pages().spans.end()) {
      page = it->first + it->second.pages * page_size();
      continue;
    }
    auto next = pages().spans.upper_bound(page);
    const uintptr_t stop = next == pages().spans.end() ? end : std::min(end, next->first);
    out.push_back({page, stop - page});
    page = stop;
  }
  return out;
}

// Both views of `gap`, claimed for the fault handler; the writable view,
// or nullptr.
uint8_t* map_gap(const Run& gap) {
  uint8_t* writable = managed_views::map(gap.address, gap.size);
  if (!writable || faults::claim(gap.address, gap.address + gap.size)) return writable;
  managed_views::unmap(gap.address, writable, gap.size);
  return nullptr;
}

// With the lock held: pages [i, i + count) of `s` lose a hold; those that
// no longer have one become invalid, one mprotect per run of them, and none
// when no page of the span is held any more: true then, and the span is to
// be unmapped.
bool release_holds(Span& s, uintptr_t base, size_t i, size_t count) {
  std::vector<size_t> released;
  for (size_t k = i; k < i + count; ++k)
    if (s.holds[k] && --s.holds[k] == 0) released.push_back(k);
  const bool span_goes =
      std::all_of(s.holds.begin(), s.holds.end(), [](uint32_t h) { return h == 0; });
  for (size_t r = 0; r < released.size();) {
    size_t q = r + 1;
    while (q < released.size() && released[q] == released[q - 1] + 1) ++q;
    if (span_goes) {
      for (size_t k = released[r]; k <= released[q - 1]; ++k) set_state(s, k, kInvalid);
    } else {
      invalidate(s, base, released[r], q - r);
    }
    r = q;
  }
  return span_goes;
}

}  // namespace

bool map(uintptr_t base, size_t size) {
  if (!faults::install(resolve, background)) return false;
  Pages& p = pages();
  std::lock_guard lock(p.mu);
  const uintptr_t first = page_floor(base), end = page_ceil(base + size);
  std::vector<Run> made;
  for (Run gap : gaps(first, end)) {
    gap.host = map_gap(gap);
    if (!gap.host) {
      for (const Run& m : made) {
        faults::release(m.address);
        managed_views::unmap(m.address, m.host, m.size);
      }
      return false;
    }
    made.push_back(gap);
  }
  for (const Run& m : made) {
    Span& s = p.spans[m.address];
    s.pages = m.size / page_size();
    s.writable = m.host;
    s.born = p.epoch;
    s.state.assign(s.pages, kFresh);
    s.holds.assign(s.pages, 0);
    s.clean_at.assign(s.pages, 0);
  }
  for_pages(base, size, [](uintptr_t, Span& s, size_t i, size_t count) {
    for (size_t k = i; k < i + count; ++k) ++s.holds[k];
  });
  p.allocations[base] = size;
  g_any.store(true, std::memory_order_release);
  return true;
}

void unmap(uintptr_t base, size_t size) {
  Pages& p = pages();
  std::lock_guard lock(p.mu);
  p.allocations.erase(base);
  forget_preferred(base, size);
  forget_walks(base, size);
  std::vector<uintptr_t> empty;
  for_pages(base, size, [&](uintptr_t first, Span& s, size_t i, size_t count) {
    if (release_holds(s, first, i, count)) empty.push_back(first);
  });
  for (uintptr_t first : empty) {
    faults::release(first);
    const Span& s = p.spans.at(first);
    managed_views::unmap(first, s.writable, s.pages * page_size());
    p.spans.erase(first);
  }
}

void retire(uintptr_t base) {
  Pages& p = pages();
  std::lock_guard lock(p.mu);
  p.allocations.erase(base);
  p.ahead = Run{0, 0};
}

void keep(uintptr_t base, size_t size) {
  std::lock_guard lock(pages().mu);
  pages().allocations[base] = size;
}

void before_request(Connection& conn, bool device_work) {
  if (device_work) registered::before_device_work(conn);
  if (device_work) live_mirrors::before_device_work();
  if (!g_any.load(std::memory_order_acquire) || routed_server() != 0) return;
  // A request that starts no device work (allocation, module setup, the
  // lanes' opening) cannot read managed memory: the host goes on writing.
  if (!device_work) return;
  // Kept only once managed memory exists, so that a program without any
  // writes no shared atomic on each launch.
  const uint64_t id = current_context_id();
  if (id && id != g_context.load(std::memory_order_relaxed))
    g_context.store(id, std::memory_order_relaxed);
  Pages& p = pages();
  std::lock_guard lock(p.mu);
  flush(conn);
  if (t_no_managed_writes) return;
  ++p.epoch;
  p.outstanding = true;
}

void after_sync(Connection& conn, bool whole_context) {
  registered::after_sync(conn, whole_context);
  live_mirrors::after_sync();
  // Managed memory is the first server's (docs/pools.md).
  if (!g_any.load(std::memory_order_acquire) || routed_server() != 0) return;
  Pages& p = pages();
  std::lock_guard lock(p.mu);
  if (p.outstanding) {
    flush(conn);  // bytes other threads dirtied since the request went out
    for (auto& [base, s] : p.spans)
      if (s.kept) invalidate(s, base, 0, s.pages);
    if (whole_context) p.outstanding = false;
    for (const auto& [address, size] : p.host_preferred) p.wanted.push_back({address, size});
  }
  for (const Run& run : p.wanted)
    for_pages(run.address, run.size, [&](uintptr_t first, Span& s, size_t i, size_t count) {
      bring_in(conn, first, s, i, count);
    });
  p.wanted.clear();
}

void device_wrote(uintptr_t address, size_t size) {
  if (!g_any.load(std::memory_order_acquire)) return;
  std::lock_guard lock(pages().mu);
  for_pages(address, size, [](uintptr_t first, Span& s, size_t i, size_t count) {
    invalidate(s, first, i, count);
  });
}

NoManagedWrites::NoManagedWrites() : outer_(t_no_managed_writes) { t_no_managed_writes = true; }
NoManagedWrites::~NoManagedWrites() { t_no_managed_writes = outer_; }

DeviceCopyInto::DeviceCopyInto(uintptr_t dst, size_t size) {
  if (is_managed(dst, size)) {
    managed_ = dst;
    size_ = size;
  } else {
    confined_.emplace();
  }
}

DeviceCopyInto::~DeviceCopyInto() {
  if (managed_) device_wrote(managed_, size_);
}

bool is_managed(uintptr_t address, size_t size) {
  if (!g_any.load(std::memory_order_acquire)) return false;
  std::lock_guard lock(pages().mu);
  return !allocated(address, size).empty();
}

void count_traffic(uint64_t pushed, uint64_t pulled) {
  g_pushed += pushed;
  g_pulled += pulled;
}

void want_on_host(uintptr_t address, size_t size) {
  if (!g_any.load(std::memory_order_acquire)) return;
  std::lock_guard lock(pages().mu);
  pages().wanted.push_back({address, size});
}

void prefer_host(uintptr_t address, size_t size, bool on) {
  if (!g_any.load(std::memory_order_acquire)) return;
  std::lock_guard lock(pages().mu);
  forget_preferred(address, size);
  if (on) pages().host_preferred[address] = size;
}

}  // namespace scuda::client::coherence

// For tests and tools: the bytes of managed memory pushed to the device and
// pulled from it so far.
extern "C" __attribute__((visibility("default"))) void scuda_page_traffic(uint64_t* pushed,
                                                                          uint64_t* pulled) {
  if (pushed) *pushed = scuda::client::coherence::g_pushed.load();
  if (pulled) *pulled = scuda::client::coherence::g_pulled.load();
}
