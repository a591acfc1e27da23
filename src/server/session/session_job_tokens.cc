// A session's part in job tokens (docs/protocol.md, "Job tokens"): the drop
// that an epilog sends with a job's token, and a drop that came while the
// session waited for its place.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "protocol/frame_io.h"
#include "protocol/ops.h"
#include "server/listener/job_revocations.h"
#include "server/listener/tokens.h"
#include "server/session/join_point.h"
#include "server/session/session.h"
#include "server/status/session_table.h"

namespace scuda::server {

using protocol::FrameHeader;

// The drop of a job's token, checked and named by check_hello: its
// job's tokens are refused from now on, and its sessions end.
bool Session::drop_job_token(uint64_t request_id) {
  const std::string job = job_of_token_name(token_.name);
  if (job.empty() || !options_.table) {
    refuse(request_id, "token-drop takes a job's token only");
    return false;
  }
  const bool again = options_.table->revoked_jobs.revoked(job, token_.expires);
  const bool kept = options_.table->revoked_jobs.revoke(job, token_.expires, unix_now_ms() / 1000);
  const int ended = options_.table->end_sessions_of(token_.name);
  if (!kept) {
    refuse(request_id, fmt::format("job {}'s {} sessions ended, but its token could not be listed "
                                   "as dropped; drop it again",
                                   job, ended));
    return false;
  }
  spdlog::info("job {}'s token dropped{}: {} of its sessions ended", job, again ? " again" : "",
               ended);
  const std::string text = fmt::format("job {}'s token {}; {} sessions ended", job,
                                       again ? "was already dropped" : "dropped", ended);
  const uint32_t result = CUDA_SUCCESS;
  FrameHeader h;
  h.flags = protocol::kReply;
  h.op = protocol::kOpTokenDrop;
  h.request_id = request_id;
  return protocol::write_frame(socket_, h, &result, sizeof result, text.data(), text.size());
}

// A job's token dropped after this handshake was checked, but before the
// slot named the token, was not seen by the drop's sweep of the sessions
// (SessionTable::end_sessions_of): the slot names it now, so look again.
bool Session::dropped_meanwhile(uint64_t request_id) {
  const std::string job = job_of_token_name(token_.name);
  if (job.empty() || !options_.table) return false;
  if (!options_.table->revoked_jobs.revoked(job, token_.expires)) return false;
  refuse(request_id, dropped_refusal(job));
  return true;
}

}  // namespace scuda::server
