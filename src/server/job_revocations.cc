#include "server/job_revocations.h"

#include <cstring>

namespace scuda::server {

namespace {

bool names(const RevokedJob& e, const std::string& job) {
  return job.size() < sizeof e.job && std::strncmp(e.job, job.c_str(), sizeof e.job) == 0;
}

}  // namespace

bool RevokedJobs::revoke(const std::string& job, int64_t expires, int64_t now) {
  if (job.size() >= sizeof entries[0].job) return false;
  if (revoked(job)) return true;
  for (RevokedJob& e : entries) {
    uint32_t state = e.state.load(std::memory_order_acquire);
    // A set entry whose token has expired is free again: the token fails on
    // its expiry alone.
    const bool reusable = state == 0 || (state == 2 && e.expires <= now);
    if (!reusable || !e.state.compare_exchange_strong(state, 1, std::memory_order_acq_rel))
      continue;
    std::memset(e.job, 0, sizeof e.job);
    std::memcpy(e.job, job.data(), job.size());
    e.expires = expires;
    e.state.store(2, std::memory_order_release);
    return true;
  }
  return false;
}

bool RevokedJobs::revoked(const std::string& job) const {
  for (const RevokedJob& e : entries)
    if (e.state.load(std::memory_order_acquire) == 2 && names(e, job)) return true;
  return false;
}

}  // namespace scuda::server
