// The jobs whose tokens (common/job_tokens.h) a scheduler's epilog dropped:
// kept in the session table, which every process of the server shares, so
// that the session that takes the drop and every later handshake see the
// same list. An entry lasts until its token would have expired anyway, and
// refuses only tokens that expire no later: a job requeued under the same
// id gets a token minted later, which expires later.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

namespace scuda::server {

constexpr size_t kRevokedJobs = 512;

struct RevokedJob {
  std::atomic<uint32_t> state{0};  // 0: free; 1: being written; 2: set
  int64_t expires = 0;             // Unix seconds
  char job[56] = {};
};

struct RevokedJobs {
  RevokedJob entries[kRevokedJobs];

  // Refuses `job`'s tokens that expire at or before `expires`; when the list
  // is full, the entry that expires first gives way. False only for an id
  // too long to keep, or a list every process is writing at once.
  bool revoke(const std::string& job, int64_t expires, int64_t now);
  // Whether `job`'s token that expires at `expires` was dropped.
  bool revoked(const std::string& job, int64_t expires) const;
};

}  // namespace scuda::server
