// libcuda.so.1's one export for other scuda stand-ins (libnvidia-ml.so.1):
// a request over this process's one connection and session, so that every
// library in a client process talks to the same server session.
#pragma once

#include <cstddef>
#include <cstdint>

extern "C" {

// Results that are not the server's: no session could be opened (the reason
// is logged), or the connection is lost.
constexpr uint32_t kScudaRemoteNoSession = 0xFFFFFFFEu;
constexpr uint32_t kScudaRemoteLost = 0xFFFFFFFFu;

// Sends request `op` with payload `req`, opening the session first if no
// cuInit did. Returns the result word the server put first in the reply and
// sets *reply (malloc'ed; the caller frees it) to the rest of the reply.
uint32_t scuda_remote_call(uint32_t op, const void* req, size_t req_size, void** reply,
                           size_t* reply_size);

}  // extern "C"
