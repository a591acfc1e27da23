#include "common/lock_order.h"

#include <cstdio>
#include <cstdlib>

// Only the checking build carries the held-lock lists: other builds keep
// their thread-local storage, which a dlopened library shares with every
// other, to what they use.
#ifdef SCUDA_CHECK_LOCK_ORDER

namespace scuda::lock_order {

namespace {

struct Held {
  const void* mu;
  LockRank rank;
  const char* name;
};

// More than the deepest nesting docs/locking.md allows.
constexpr int kMaxHeld = 16;

// The calling thread's locks, in the order it took them.
thread_local Held t_held[kMaxHeld];
thread_local int t_count = 0;
thread_local int t_unchecked = 0;  // Unchecked scopes open on this thread

[[noreturn]] void broken(const char* name, LockRank rank, const Held& held) {
  std::fprintf(stderr,
               "scuda: lock order broken: taking %s (rank %d) while holding %s (rank %d); "
               "docs/locking.md gives the order\n",
               name, static_cast<int>(rank), held.name, static_cast<int>(held.rank));
  std::abort();
}

}  // namespace

void check(LockRank rank, const char* name) {
  if (t_unchecked) return;
  for (int i = 0; i < t_count; ++i)
    if (t_held[i].rank >= rank) broken(name, rank, t_held[i]);
}

void acquired(const void* mu, LockRank rank, const char* name) {
  if (t_unchecked) return;
  if (t_count == kMaxHeld) {
    std::fprintf(stderr, "scuda: lock order: more than %d locks held at once, taking %s\n",
                 kMaxHeld, name);
    std::abort();
  }
  t_held[t_count++] = {mu, rank, name};
}

void released(const void* mu) {
  // Usually the last one taken; std::unique_lock may release earlier ones first.
  for (int i = t_count - 1; i >= 0; --i) {
    if (t_held[i].mu != mu) continue;
    for (int j = i; j + 1 < t_count; ++j) t_held[j] = t_held[j + 1];
    --t_count;
    return;
  }
}

Unchecked::Unchecked() { ++t_unchecked; }
Unchecked::~Unchecked() { --t_unchecked; }

}  // namespace scuda::lock_order

#endif  // SCUDA_CHECK_LOCK_ORDER
