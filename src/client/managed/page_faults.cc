#include "client/managed/page_faults.h"

#include <sys/mman.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "client/managed/page_moves.h"
#include "client/managed/page_table.h"
#include "client/stats.h"
#include "client/transport/session.h"

namespace scuda::client::coherence::detail {
namespace {

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

}  // namespace

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

void background() {
  push_finished();
  pull_ahead();
}

void forget_walks(uintptr_t base, size_t size) {
  Pages& p = pages();
  p.reached.erase(p.reached.lower_bound(base), p.reached.lower_bound(base + size));
}

}  // namespace scuda::client::coherence::detail
