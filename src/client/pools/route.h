// Which server a request goes to, when the session has several
// (servers.h). A call that names a device, or an object made on one server
// (its handle id carries the server), goes to that server; any other call
// goes to the server of the thread's current context, and without one to
// the first server. With one server every call goes to it and none of this
// costs more than a check.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace scuda::client {

// The server the calling thread's requests go to now.
uint32_t routed_server();

// The context a request makes current on the server it goes to: the
// thread's, unless that lives on another server; then the one the call's
// Route chose, if any. False: none (the server keeps the last one the
// thread made current there).
bool routed_context(uint64_t* id);

// `dev`'s number on its own server (the program's number when it names no
// device, for the server to refuse).
CUdevice local_device(CUdevice dev);

// A handle id made now carries the server the thread routes to, so that a
// later call naming it goes there. Ids of one server are unchanged.
uint64_t tag_handle(uint64_t id);
// The server a handle id was made on; false when it carries none (NULL,
// the legacy streams, ids made before the session had several servers).
bool handle_server(uint64_t id, uint32_t* server);

// For one call: routes the thread's requests to the server its arguments
// name, until destroyed. Routes nest; the innermost one decides.
class Route {
 public:
  Route();
  ~Route();
  Route(const Route&) = delete;
  Route& operator=(const Route&) = delete;

  // Routes to `server`. A second server for the same Route is a conflict.
  void to(uint32_t server);
  // Routes to device `dev`'s server, when it names a device.
  void device(CUdevice dev);
  // Routes to the server handle id `id` was made on, when it carries one.
  void handle(uint64_t id);
  // Routes to the server of device `dev`'s memory; when the thread's
  // context is on another server, the device's primary context serves the
  // call (the driver lets any context reach any device's memory).
  void device_memory(CUdevice dev);
  // device_memory for the device memory at `address`, when the client
  // placed it (mapped_allocations.cc).
  void address(uint64_t address);
  // For a memory location: a device location routes to its device's
  // server and comes back with that server's number; others as they are.
  CUmemLocation location(CUmemLocation location);
  // False when the call's arguments name objects of two servers.
  bool ok() const { return ok_; }
  // Logs why `name` cannot run across servers and returns
  // CUDA_ERROR_NOT_SUPPORTED.
  CUresult refuse(const char* name) const;

 private:
  // -2: nothing saved (one server: the route never changes).
  int saved_ = -2;
  uint64_t saved_context_ = 0;
  int chosen_ = -1;
  int other_ = -1;
  bool ok_ = true;
};

}  // namespace scuda::client
