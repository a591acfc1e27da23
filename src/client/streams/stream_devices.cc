#include "client/streams/stream_devices.h"

#include <mutex>
#include <unordered_map>

#include "client/runtime.h"
#include "client/state.h"
#include "common/lock_order.h"
#include "custom.h"
#include "forward.h"

namespace scuda::client {

namespace parts {

struct StreamDevices {
  RankedMutex mu{LockRank::kLeaf, "stream devices"};
  std::unordered_map<uint64_t, CUdevice> devices;  // stream id -> device
};

}  // namespace parts

namespace {

parts::StreamDevices& streams() { return client_state().stream_devices.get(); }

// A stream is created in the current context: its device is the stream's.
CUresult note_stream(CUresult rc, CUstream* stream) {
  CUdevice dev = 0;
  if (rc != CUDA_SUCCESS || cuCtxGetDevice(&dev) != CUDA_SUCCESS) return rc;
  std::lock_guard lock(streams().mu);
  streams().devices[handle_id(*stream)] = dev;
  return rc;
}

}  // namespace

bool stream_device(uint64_t id, CUdevice* dev) {
  std::lock_guard lock(streams().mu);
  auto it = streams().devices.find(id);
  if (it == streams().devices.end()) return false;
  *dev = it->second;
  return true;
}

}  // namespace scuda::client

namespace client = scuda::client;

CUresult scuda::client::custom::cuStreamCreate(CUstream* stream, unsigned int flags) {
  return client::note_stream(client::forward::cuStreamCreate(stream, flags), stream);
}

CUresult scuda::client::custom::cuStreamCreateWithPriority(CUstream* stream, unsigned int flags,
                                                           int priority) {
  return client::note_stream(client::forward::cuStreamCreateWithPriority(stream, flags, priority),
                             stream);
}
