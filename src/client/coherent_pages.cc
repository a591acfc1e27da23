#include "client/coherent_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/context.h"
#include "client/fault_handler.h"
#include "client/managed_views.h"
#include "client/page_transfers.h"
#include "client/registered_memory.h"
#include "client/route.h"
#include "common/changed_runs.h"
#include "client/session.h"
#include "client/stats.h"
#include "protocol/frame.h"
#include "protocol/ops.h"

namespace scuda::client::coherence {

size_t page_size() {
  static const size_t n = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  return n;
}

namespace {

// kArrived: pulled ahead into the writable view (pull_ahead) while the
// program's view stays PROT_NONE; the host's first touch only unprotects it.
// kZeroed: a fresh page the host was given as zeros, before any device work.
// The server's bytes may differ (memory it reuses), so once written the page
// is pushed whole, with no twin.
enum State : uint8_t { kFresh, kInvalid, kArrived, kZeroed, kClean, kDirty };

// Readahead for faults in sequence, in pages: a walk's window doubles up to
// this, so that a long sequential read or write moves in runs the lanes
// carry, while a walk that stops soon moves at most about what it touched.
constexpr size_t kMaxWindow = 8192;
// A store's window stops growing at this, in pages: the windows a walk has
// written are pushed while it writes the next (push_finished), so smaller
// windows let more of a long write cross the link while the host writes.
constexpr size_t kMaxStoreWindow = 2048;
// A read walk whose window has reached this, in pages, has its next window
// pulled ahead (pull_ahead): only the longest walks, where the overlap pays
// (starting at 4 MiB windows gained nothing on the GPU host).
constexpr size_t kAheadFrom = kMaxWindow;

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
  std::mutex mu;
  std::map<uintptr_t, Span> spans;  // by first page
  // The live allocations: a copy on the server must stay inside one, so
  // page-sized transfers are cut to them.
  std::map<uintptr_t, size_t> allocations;
  uint64_t epoch = 0;               // requests that may have started device work
  bool outstanding = false;         // such requests since every stream was last idle
  size_t dirty = 0;
  std::vector<Run> wanted;          // prefetched to the host
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

std::atomic<bool> g_any{false};  // has managed memory ever been mapped?
// Set on a thread while it sends a request whose device work writes no
// managed memory (NoManagedWrites).
thread_local bool t_no_managed_writes = false;
// The context of the program's last request that may start device work:
// transfers from the fault service, which has none of its own, run in it,
// whatever another thread (one opening the lanes) left current on the server.
std::atomic<uint64_t> g_context{0};

// With the connection's lock held: the server's current context is one of
// the program's.
void in_program_context(Connection& conn) {
  if (const uint64_t id = g_context.load(std::memory_order_relaxed)) conn.sync_context(id);
}
// Page data moved so far (scuda_page_traffic).
std::atomic<uint64_t> g_pushed{0};
std::atomic<uint64_t> g_pulled{0};

Pages& pages() {
  static Pages* p = new Pages;  // never freed: faults may come until exit
  return *p;
}

uintptr_t page_floor(uintptr_t a) { return a & ~(page_size() - 1); }
uintptr_t page_ceil(uintptr_t a) { return page_floor(a + page_size() - 1); }

void protect(uintptr_t address, size_t pages, int prot) {
  stats::Timed timed("managed: mprotect");
  if (mprotect(reinterpret_cast<void*>(address), pages * page_size(), prot) != 0)
    spdlog::error("managed memory: mprotect of {:#x} failed: {}", address, std::strerror(errno));
}

// With the lock held: the pieces of [address, address + size) inside live
// allocations, in order.
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

// With the lock held: the span holding `page`, or end().
std::map<uintptr_t, Span>::iterator span_of(uintptr_t page) {
  auto& spans = pages().spans;
  auto it = spans.upper_bound(page);
  if (it == spans.begin()) return spans.end();
  --it;
  return page < it->first + it->second.pages * page_size() ? it : spans.end();
}

bool fresh(const Span& s, size_t i) { return s.state[i] == kFresh && s.born == pages().epoch; }
bool needs_fetch(const Span& s, size_t i) { return s.holds[i] && s.state[i] <= kInvalid && !fresh(s, i); }

void set_state(Span& s, size_t i, State to) {
  const State from = static_cast<State>(s.state[i]);
  s.dirty += (to == kDirty) - (from == kDirty);
  pages().dirty += (to == kDirty) - (from == kDirty);
  s.kept += (to >= kArrived) - (from >= kArrived);
  if (from == kDirty) s.twins.erase(i);
  if (to == kClean || to == kZeroed) s.clean_at[i] = pages().epoch;
  s.state[i] = to;
}

// --- pushing dirty bytes ---------------------------------------------------

void add_run(std::vector<Run>& runs, uintptr_t address, size_t size) {
  if (!runs.empty() && address - (runs.back().address + runs.back().size) <= kMergeGap)
    runs.back().size = address + size - runs.back().address;
  else
    runs.push_back({address, size});
}

// The bytes of a dirty page that differ from its twin.
void diff(uintptr_t page, const uint8_t* twin, std::vector<Run>& runs) {
  for_each_changed_run(reinterpret_cast<const uint8_t*>(page), twin, page_size(),
                       [&](size_t at, size_t n) { add_run(runs, page + at, n); });
}

// With the lock held: the pieces of `runs` inside live allocations.
std::vector<Run> allocated(const std::vector<Run>& runs) {
  std::vector<Run> out;
  for (const Run& run : runs)
    for (const Run& piece : allocated(run.address, run.size)) out.push_back(piece);
  return out;
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

// With both locks held: the dirty pages among [i, end) of `s` become
// clean, their bytes added to `runs`, one mprotect per run of them.
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

// With both locks held: pushes every dirty page, in runs.
void flush(Connection& conn) {
  Pages& p = pages();
  p.finished.clear();
  if (p.dirty == 0) return;
  std::vector<Run> runs;
  for (auto& [base, s] : p.spans) clean_dirty(base, s, 0, s.pages, runs);
  push_runs(conn, runs);
}

// --- fetching ----------------------------------------------------------------

// With the lock held: where the client's writable view holds `address`, a
// byte of some span.
uint8_t* writable_view(uintptr_t address) {
  const auto it = span_of(page_floor(address));
  return it->second.writable + (address - it->first);
}

// With both locks held: reads the device's copy of the pages of `runs` into
// their writable view, all pieces asked before the first is read. The
// program's view of them stays as it is.
bool pull_into_view(Connection& conn, const std::vector<Run>& runs) {
  std::vector<Run> pieces = allocated(runs);
  for (Run& piece : pieces) piece.host = writable_view(piece.address);
  in_program_context(conn);
  bool ok = false;
  {
    stats::Timed timed("managed: pull");
    ok = page_transfers::pull(conn, pieces);
  }
  if (!ok)
    spdlog::error("managed memory: fetching {} runs from {:#x} failed; the host sees stale data",
                  runs.size(), runs.empty() ? 0 : runs.front().address);
  return ok;
}

// With both locks held: pull_into_view, then the program may read the pages.
bool pull(Connection& conn, const std::vector<Run>& runs) {
  const bool ok = pull_into_view(conn, runs);
  for (const Run& r : runs) protect(r.address, r.size / page_size(), PROT_READ);
  return ok;
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

// With both locks held: makes pages [i, i + count) of `s` clean, fetching
// those that need it, every run in one pipelined pull.
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

// With the lock held: `w`'s origin is remembered with `window`.
void remember_reach(const Walk& w, size_t window) {
  Pages& p = pages();
  if (p.reached.size() >= kOrigins && !p.reached.count(w.origin)) p.reached.clear();
  p.reached[w.origin] = window;
}

// With the lock held: the walk a fault at `page` continues, its window
// doubled; else the least recently moved walk, restarted at `page` with
// the window a walk from there reached before (a read), or one page. A
// store that continues a walk leaves the walk's last run finished: it is
// pushed in the background (push_finished).
Walk& walk_for(uintptr_t page, bool write) {
  Pages& p = pages();
  ++p.faults;
  Walk* oldest = &p.walks[0];
  for (Walk& w : p.walks) {
    if (w.sequel == page && w.sequel != 0) {
      w.window = std::min(w.window * 2, kMaxWindow);
      w.last = p.faults;
      remember_reach(w, w.window);
      if (write) p.finished.push_back({w.start, page - w.start});
      return w;
    }
    if (w.last < oldest->last) oldest = &w;
  }
  // Only reads start where a walk left off: a store's window is pushed
  // whole, so one word written where a long write began would move it all.
  // A read walk that does not go on resets its origin's memory.
  size_t window = 1;
  if (auto before = p.reached.find(page); before != p.reached.end() && !write)
    window = std::exchange(before->second, 1);
  *oldest = Walk{page, page, window, p.faults, page};
  return *oldest;
}

// With the lock held: walks that began in [base, base + size) are
// forgotten, so that memory allocated there later ramps up afresh.
void forget_walks(uintptr_t base, size_t size) {
  Pages& p = pages();
  p.reached.erase(p.reached.lower_bound(base), p.reached.lower_bound(base + size));
}

// A clean page the device may have changed since it matched: device work
// was sent after, and not all of it is known to be done. A host write there
// is read-modify-write as often as not (the host's side of system-scope
// atomics), so the page is pulled again first: the pull is ordered after
// that work, and the host's change then lands on the device's, as it would
// on a page the driver migrated to the host.
bool stale(const Span& s, size_t i) {
  return pages().outstanding && s.clean_at[i] != pages().epoch;
}

// A page made writable needs a twin while device work may be changing the
// device's copy: only the bytes the host changed may be pushed then. With
// every stream idle since the page last matched, the device's copy equals
// the page's clean contents, so the whole page is pushed and no twin is
// taken.
bool needs_twin(const Span& s, size_t i) { return s.state[i] == kClean && pages().outstanding; }

// With the lock held: page k of `s` (writable now) becomes dirty, with a
// twin of its clean contents when it needs one.
void take_twin(Span& s, uintptr_t base, size_t k) {
  const bool twin = needs_twin(s, k);
  set_state(s, k, kDirty);
  if (!twin) return;
  auto copy = std::make_unique<uint8_t[]>(page_size());
  std::memcpy(copy.get(), reinterpret_cast<const void*>(base + k * page_size()), page_size());
  s.twins[k] = std::move(copy);
}

// With both locks held: the clean or zeroed pages among [i, i + count)
// become dirty, writable in runs. Stale ones are pulled again first.
void make_writable(Connection& conn, uintptr_t base, Span& s, size_t i, size_t count) {
  auto writable = [&](size_t k) {
    return s.holds[k] && (s.state[k] == kClean || s.state[k] == kZeroed);
  };
  std::vector<Run> refetch;
  for (size_t k = i; k < i + count; ++k)
    if (writable(k) && s.state[k] == kClean && stale(s, k))
      add_run(refetch, base + k * page_size(), page_size());
  if (!refetch.empty()) pull(conn, refetch);
  for (size_t end = i + count; i < end;) {
    if (!writable(i)) {
      ++i;
      continue;
    }
    size_t j = i + 1;
    while (j < end && writable(j)) ++j;
    protect(base + i * page_size(), j - i, PROT_READ | PROT_WRITE);
    for (size_t k = i; k < j; ++k) take_twin(s, base, k);
    i = j;
  }
}

// The fault service (fault_handler.h): a read brings in the page and the
// pages its walk reads ahead, read-only; a write makes them writable as
// well, so that a sequential store faults once per window, not per page.
bool resolve(uintptr_t address, bool write) {
  Connection* conn = connection();
  if (!conn) return false;
  stats::Timed timed(write ? "managed: store fault" : "managed: load fault");
  std::lock_guard conn_lock(conn->mutex());
  Pages& p = pages();
  std::lock_guard lock(p.mu);
  const uintptr_t page = page_floor(address);
  auto it = span_of(page);
  if (it == p.spans.end()) return false;
  Span& s = it->second;
  const size_t i = (page - it->first) / page_size();
  if (!s.holds[i]) return false;
  if (s.state[i] == kDirty) return true;
  const bool valid = s.state[i] == kClean || s.state[i] == kZeroed;
  if (valid && !write) return true;  // another thread's fault served it
  Walk& walk = walk_for(page, write);
  const size_t window = write ? std::min(walk.window, kMaxStoreWindow) : walk.window;
  size_t count = 1;
  while (count < window && i + count < s.pages && s.holds[i + count] &&
         (valid ? s.state[i + count] == kClean || s.state[i + count] == kZeroed
                : s.state[i + count] < kZeroed))
    ++count;
  // A window that takes the rest of the span may have been read whole or
  // not at all: half of it is remembered, so a read of the whole buffer
  // starts the next time with two faults at most, and a read that stops at
  // once halves it and then, short of the end, forgets it.
  if (i + count == s.pages) remember_reach(walk, std::max<size_t>(walk.window / 2, 1));
  if (!valid) bring_in(*conn, it->first, s, i, count);
  if (write) make_writable(*conn, it->first, s, i, count);
  walk.start = page;
  walk.sequel = page + count * page_size();
  // A read walk this long goes on: its next window is pulled while the
  // host reads this one.
  const size_t next = std::min(walk.window * 2, kMaxWindow);
  p.ahead = !write && walk.window >= kAheadFrom ? Run{walk.sequel, next * page_size()} : Run{0, 0};
  return true;
}

// With the lock held: calls fn(base, span, first, count) for each span's
// pages overlapping [address, address + size).
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

// Pages [i, i + count) of `s` become invalid, one mprotect per run of
// valid pages.
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

// The fault service's background work: pushes the runs walks wrote and
// moved past, so that a long sequential write crosses the link while the
// host writes its next window, instead of all at the next request. A page
// written again afterwards faults and is pushed again at the next request.
void push_finished() {
  Pages& p = pages();
  // Before the program's first device work its context is not known here;
  // its first request pushes what is dirty.
  if (g_context.load(std::memory_order_relaxed) == 0) return;
  {
    std::lock_guard lock(p.mu);
    if (p.finished.empty()) return;
  }
  Connection* conn = connection();
  if (!conn) return;
  std::lock_guard conn_lock(conn->mutex());
  std::lock_guard lock(p.mu);
  std::vector<Run> runs;
  for (const Run& r : p.finished)
    for_pages(r.address, r.size, [&](uintptr_t base, Span& s, size_t i, size_t count) {
      clean_dirty(base, s, i, i + count, runs);
    });
  p.finished.clear();
  push_runs(*conn, runs);
  conn->flush();  // one-way frames go now, not with the next request
}

// The fault service's background work after a load fault that continued a
// long sequential read: the walk's next window is pulled into the writable
// view while the host reads the current one. Its pages stay protected
// (arrived) until the host reaches them, which then costs one mprotect and
// no transfer; device work's invalidation drops them as it drops any page.
void pull_ahead() {
  Pages& p = pages();
  {
    std::lock_guard lock(p.mu);
    if (p.ahead.size == 0) return;
  }
  Connection* conn = connection();
  if (!conn) return;
  std::lock_guard conn_lock(conn->mutex());
  std::lock_guard lock(p.mu);
  const Run ahead = std::exchange(p.ahead, Run{0, 0});
  std::vector<Run> runs;  // each inside one span, as writable_view needs
  for_pages(ahead.address, ahead.size, [&](uintptr_t base, Span& s, size_t i, size_t count) {
    for (size_t k = i, end = i + count; k < end;) {
      if (!needs_fetch(s, k)) {
        ++k;
        continue;
      }
      size_t j = k + 1;
      while (j < end && needs_fetch(s, j)) ++j;
      runs.push_back({base + k * page_size(), (j - k) * page_size()});
      k = j;
    }
  });
  if (runs.empty()) return;
  stats::Timed timed("managed: pull ahead");
  if (!pull_into_view(*conn, runs)) return;
  for (const Run& r : runs)
    for_pages(r.address, r.size, [&](uintptr_t, Span& s, size_t i, size_t count) {
      for (size_t k = i; k < i + count; ++k) {
        set_state(s, k, kArrived);
        s.clean_at[k] = p.epoch;
      }
    });
}

// Runs on the fault service once a fault is served and none waits.
void background() {
  push_finished();
  pull_ahead();
}

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

// --- mapping -------------------------------------------------------------------

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
