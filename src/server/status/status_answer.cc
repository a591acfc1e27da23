#include "server/status/status_answer.h"

#include <cuda.h>

#include "protocol/frame_io.h"
#include "protocol/ops.h"
#include "server/status/server_state.h"
#include "server/status/status_json.h"

namespace scuda::server {

bool answer_status(Socket& socket, uint64_t request_id, const SessionTable* table) {
  if (!table)
    return protocol::write_error(socket, request_id, "this server process keeps no session table");
  const std::string text = status_json(read_state(*table)).dump();
  const uint32_t result = CUDA_SUCCESS;
  protocol::FrameHeader h;
  h.flags = protocol::kReply;
  h.op = protocol::kOpStatus;
  h.request_id = request_id;
  return protocol::write_frame(socket, h, &result, sizeof result, text.data(), text.size());
}

}  // namespace scuda::server
