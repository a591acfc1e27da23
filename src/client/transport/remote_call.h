// libcuda.so.1's exports for other scuda stand-ins (libnvidia-ml.so.1):
// requests over this process's connections and sessions, so that every
// library in a client process talks to the same server sessions.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

// Results that are not the server's: no session could be opened (the reason
// is logged), or the connection is lost.
constexpr uint32_t kScudaRemoteNoSession = 0xFFFFFFFEu;
constexpr uint32_t kScudaRemoteLost = 0xFFFFFFFFu;

// Sends request `op` with payload `req` to server `server` of the session
// (0 with one server), opening the session first if no cuInit did. Returns
// the result word the server put first in the reply and sets *reply
// (malloc'ed; the caller frees it) to the rest of the reply.
// kScudaRemoteNoSession also when `server` names none.
uint32_t scuda_remote_call(uint32_t server, uint32_t op, const void* req, size_t req_size,
                           void** reply, size_t* reply_size);

// How many servers the session has (opening it first); 0 when none can be
// opened.
uint32_t scuda_server_count();

}  // extern "C"
