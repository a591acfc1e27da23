// Locks ranked by the order docs/locking.md ("The order") allows: a thread
// may take a lock only while every lock it holds ranks lower, so two
// threads can never wait for each other's locks. Builds with
// SCUDA_CHECK_LOCK_ORDER (the test build: CMake's SCUDA_CHECK_LOCK_ORDER)
// check this at every lock and abort, naming both locks, when it is broken;
// other builds compile a RankedMutex down to the std::mutex inside it.
#pragma once

#include <mutex>

namespace scuda {

// Ranks, lowest first. Locks of one rank are never nested in each other.
enum class LockRank : int {
  kNvmlAnswers = 10,  // NVML's answers: init and shutdown may open the session under it
  kRoundTrip = 20,    // held across a request and its reply, taken before the connection
  kConnection = 30,   // a connection's request stream
  kCoherence = 40,    // host memory kept coherent: registered ranges, managed pages
  kSocketWrite = 50,  // a connection's socket, write side
  kLookups = 55,      // kernel and symbol lookups, which forget names under it
  kReplyTables = 60,  // tables that reply handlers update, under the read turn
  kReplyFiles = 65,   // the files kept beside those tables
  kLeaf = 80,         // one table or cache, held for a lookup or an update
  kTls = 85,          // a TLS socket's OpenSSL state, under whatever reads or writes it
  kStats = 90,        // the call counters, counted under anything
};

namespace lock_order {

#ifdef SCUDA_CHECK_LOCK_ORDER
// Aborts unless every lock the calling thread holds ranks below `rank`.
void check(LockRank rank, const char* name);
// Notes that the calling thread holds (or no longer holds) `mu`.
void acquired(const void* mu, LockRank rank, const char* name);
void released(const void* mu);
#endif

// While one exists on a thread, that thread's locks are neither checked nor
// counted: for a fork handler, which takes every connection's locks, one
// connection after another in one fixed order that no other thread nests.
class Unchecked {
 public:
#ifdef SCUDA_CHECK_LOCK_ORDER
  Unchecked();
  ~Unchecked();
#else
  Unchecked() {}
#endif
  Unchecked(const Unchecked&) = delete;
  Unchecked& operator=(const Unchecked&) = delete;
};

}  // namespace lock_order

// A std::mutex with its rank and name, for std::lock_guard and
// std::unique_lock (not std::condition_variable: the few locks waited on
// with one stay plain leaves).
class RankedMutex {
 public:
  constexpr RankedMutex(LockRank rank, const char* name) noexcept
#ifdef SCUDA_CHECK_LOCK_ORDER
      : rank_(rank),
        name_(name)
#endif
  {
    (void)rank;
    (void)name;
  }
  RankedMutex(const RankedMutex&) = delete;
  RankedMutex& operator=(const RankedMutex&) = delete;

  void lock() {
#ifdef SCUDA_CHECK_LOCK_ORDER
    lock_order::check(rank_, name_);
    mu_.lock();
    lock_order::acquired(this, rank_, name_);
#else
    mu_.lock();
#endif
  }

  // Never waits, so it cannot close a cycle: taken out of order too.
  bool try_lock() {
    if (!mu_.try_lock()) return false;
#ifdef SCUDA_CHECK_LOCK_ORDER
    lock_order::acquired(this, rank_, name_);
#endif
    return true;
  }

  void unlock() {
#ifdef SCUDA_CHECK_LOCK_ORDER
    lock_order::released(this);
#endif
    mu_.unlock();
  }

 private:
  std::mutex mu_;
#ifdef SCUDA_CHECK_LOCK_ORDER
  LockRank rank_;
  const char* name_;
#endif
};

}  // namespace scuda
