// The state behind coherent_pages.h, shared by its parts: every mapped span
// of managed pages with each page's state and holds, the live allocations,
// the host's sequential walks, and the helpers that read and change them.
// Every function here expects pages().mu held unless it says otherwise.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "client/managed/coherent_pages.h"
#include "client/managed/page_transfers.h"
#include "client/transport/connection.h"
#include "common/lock_order.h"

namespace scuda::client::coherence::detail {

// kArrived: pulled ahead into the writable view (pull_ahead) while the
// program's view stays PROT_NONE; the host's first touch only unprotects it.
// kZeroed: a fresh page the host was given as zeros, before any device work.
// The server's bytes may differ (memory it reuses), so once written the page
// is pushed whole, with no twin.
enum State : uint8_t { kFresh, kInvalid, kArrived, kZeroed, kClean, kDirty };

// Pages mapped together; several allocations may hold one page.
struct Span {
  size_t pages = 0;
  uint8_t* writable = nullptr;  // the client's view of the same pages (managed_views.h)
  uint64_t born = 0;  // the work epoch when mapped: until device work, fresh pages are zeros
  std::vector<uint8_t> state;
  std::vector<uint32_t> holds;
  // The work epoch when each page last matched the device's (for an
  // arrived page: when it was pulled).
  std::vector<uint64_t> clean_at;
  std::map<size_t, std::unique_ptr<uint8_t[]>> twins;  // dirty page -> its clean contents
  size_t dirty = 0;
  size_t kept = 0;  // pages holding the device's bytes or the host's: arrived or later
  // Pulls left before one compares the host's bytes again: set when a
  // compared pull found the device had changed nearly everything, as it
  // does in a buffer that device work fills, where hashing only costs.
  uint8_t plain_pulls = 0;
};

using Run = page_transfers::Range;

// One sequential walk: where its next fault is expected and how many pages
// its fetches read ahead.
struct Walk {
  uintptr_t sequel = 0;  // the page after the walk's last fetched run
  uintptr_t start = 0;   // the first page of that run
  size_t window = 1;
  uint64_t last = 0;     // the fault that last moved it, for replacement
  uintptr_t origin = 0;  // the page where the walk began
};
constexpr size_t kWalks = 8;
// Walk origins remembered with the window their walk reached; past this
// many the memory starts afresh.
constexpr size_t kOrigins = 256;

struct Pages {
  RankedMutex mu{LockRank::kCoherence, "Pages::mu"};
  std::map<uintptr_t, Span> spans;  // by first page
  // The live allocations: a copy on the server must stay inside one, so
  // page-sized transfers are cut to them.
  std::map<uintptr_t, size_t> allocations;
  uint64_t epoch = 0;        // requests that may have started device work
  bool outstanding = false;  // such requests since every stream was last idle
  size_t dirty = 0;
  std::vector<Run> wanted;                     // prefetched to the host
  std::map<uintptr_t, size_t> host_preferred;  // advised to live on the host
  // Sequential walks the host is making, each with its readahead: a loop
  // over several arrays at once (a = b + c) faults in each in turn.
  std::array<Walk, kWalks> walks{};
  uint64_t faults = 0;
  // The window each walk reached, by the page where it began: a program
  // that reads a buffer again (each step of a loop) starts with that
  // window instead of ramping up from one page. Forgotten when the memory
  // is freed.
  std::map<uintptr_t, size_t> reached;
  // Runs a walk wrote and then moved past, pushed by the fault service
  // while the host writes on.
  std::vector<Run> finished;
  // The window a long sequential read reaches next, pulled by the fault
  // service while the host reads the current one (pull_ahead).
  Run ahead{0, 0};
};

// The context of the program's last request that may start device work:
// transfers from the fault service, which has none of its own, run in it,
// whatever another thread (one opening the lanes) left current on the server.
extern std::atomic<uint64_t> g_context;

// The one table of managed pages, made on first use and never freed.
Pages& pages();

// The page holding `a`, and the first page boundary at or after it.
inline uintptr_t page_floor(uintptr_t a) { return a & ~(page_size() - 1); }
inline uintptr_t page_ceil(uintptr_t a) { return page_floor(a + page_size() - 1); }

// mprotect of `pages` pages from `address` (its failure is logged), timed in
// the stats as "managed: mprotect". Needs no lock.
void protect(uintptr_t address, size_t pages, int prot);

// With the connection's lock held: the server's current context is one of
// the program's.
void in_program_context(Connection& conn);

// The pieces of [address, address + size), and of `runs`, inside live
// allocations, in order.
std::vector<Run> allocated(uintptr_t address, size_t size);
std::vector<Run> allocated(const std::vector<Run>& runs);

// The span holding `page`, or pages().spans.end().
std::map<uintptr_t, Span>::iterator span_of(uintptr_t page);

// Page i of `s` was never used since device work began: it reads as zeros.
inline bool fresh(const Span& s, size_t i) {
  return s.state[i] == kFresh && s.born == pages().epoch;
}
// Page i of `s` is held and its bytes are the device's to fetch.
inline bool needs_fetch(const Span& s, size_t i) {
  return s.holds[i] && s.state[i] <= kInvalid && !fresh(s, i);
}
// Page i of `s` moves to `to`, keeping the dirty and kept counts, its twin
// and its clean epoch in step.
void set_state(Span& s, size_t i, State to);

// Pages [i, i + count) of `s` become invalid, one mprotect per run of
// valid pages.
void invalidate(Span& s, uintptr_t base, size_t i, size_t count);

// Calls fn(base, span, first, count) for each span's pages overlapping
// [address, address + size).
template <class Fn>
void for_pages(uintptr_t address, size_t size, Fn fn) {
  Pages& p = pages();
  const uintptr_t end = page_ceil(address + size);
  for (uintptr_t page = page_floor(address); page < end;) {
    auto it = span_of(page);
    if (it == p.spans.end()) {
      auto next = p.spans.upper_bound(page);
      if (next == p.spans.end()) return;
      page = next->first;
      continue;
    }
    const uintptr_t span_end = it->first + it->second.pages * page_size();
    const uintptr_t stop = std::min(end, span_end);
    fn(it->first, it->second, (page - it->first) / page_size(), (stop - page) / page_size());
    page = stop;
  }
}

}  // namespace scuda::client::coherence::detail
