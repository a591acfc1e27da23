#include "server/listener/job_revocations.h"

#include <cstring>

namespace scuda::server {

namespace {

bool names(const RevokedJob& e, const std::string& job) {
  return job.size() < sizeof e.job && std::strncmp(e.job, job.c_str(), sizeof e.job) == 0;
}

// Takes entry `e` from `state` for writing; false when another process got
// there first.
bool claim(RevokedJob& e, uint32_t state) {
  return e.state.compare_exchange_strong(state, 1, std::memory_order_acq_rel);
}

void publish(RevokedJob& e, const std::string& job, int64_t expires) {
  std::memset(e.job, 0, sizeof e.job);
  std::memcpy(e.job, job.data(), job.size());
  e.expires = expires;
  e.state.store(2, std::memory_order_release);
}

}  // namespace

// An entry already naming the job keeps the later expiry. A full list gives
// up the entry whose token expires first: a drop must never fail for room.
bool RevokedJobs::revoke(const std::string& job, int64_t expires, int64_t now) {
  if (job.size() >= sizeof entries[0].job) return false;
  for (RevokedJob& e : entries) {
    if (e.state.load(std::memory_order_acquire) != 2 || !names(e, job)) continue;
    if (e.expires < expires && claim(e, 2)) publish(e, job, expires);
    return true;
  }
  RevokedJob* soonest = nullptr;
  for (RevokedJob& e : entries) {
    const uint32_t state = e.state.load(std::memory_order_acquire);
    // A set entry whose token has expired is free again: the token fails on
    // its expiry alone.
    if ((state == 0 || (state == 2 && e.expires <= now)) && claim(e, state)) {
      publish(e, job, expires);
      return true;
    }
    if (state == 2 && (!soonest || e.expires < soonest->expires)) soonest = &e;
  }
  if (!soonest || !claim(*soonest, 2)) return false;
  publish(*soonest, job, expires);
  return true;
}

bool RevokedJobs::revoked(const std::string& job, int64_t expires) const {
  for (const RevokedJob& e : entries)
    if (e.state.load(std::memory_order_acquire) == 2 && names(e, job) && expires <= e.expires)
      return true;
  return false;
}

}  // namespace scuda::server
