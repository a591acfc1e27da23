#include "client/transport/remote_call.h"

#include <cstdlib>
#include <cstring>
#include <vector>

#include "client/pools/route.h"
#include "client/pools/servers.h"
#include "client/runtime.h"
#include "client/transport/session.h"

extern "C" __attribute__((visibility("default"))) uint32_t scuda_server_count() {
  if (scuda::client::open_session() != CUDA_SUCCESS) return 0;
  return scuda::client::server_count();
}

extern "C" __attribute__((visibility("default"))) uint32_t scuda_remote_call(
    uint32_t server, uint32_t op, const void* req, size_t req_size, void** reply,
    size_t* reply_size) {
  *reply = nullptr;
  *reply_size = 0;
  if (scuda::client::open_session() != CUDA_SUCCESS) return kScudaRemoteNoSession;
  if (server >= scuda::client::server_count()) return kScudaRemoteNoSession;
  scuda::client::Route route;
  if (scuda::client::several_servers()) route.to(server);
  scuda::protocol::Writer request;
  request.bytes(req, req_size);
  std::vector<uint8_t> payload;
  const CUresult rc = scuda::client::call(op, request, &payload);
  // No nvmlReturn_t has this value: it means the connection is lost.
  if (rc == CUDA_ERROR_DEVICE_UNAVAILABLE) return kScudaRemoteLost;
  if (!payload.empty()) {
    *reply = std::malloc(payload.size());
    if (!*reply) return kScudaRemoteLost;
    std::memcpy(*reply, payload.data(), payload.size());
    *reply_size = payload.size();
  }
  return static_cast<uint32_t>(rc);
}
