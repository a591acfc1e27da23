#include "client/pools/route.h"

#include <spdlog/spdlog.h>

#include "client/contexts/context.h"
#include "client/memory/memory.h"
#include "client/pools/servers.h"

namespace scuda::client {

namespace {

// The route of the call the thread is in; -1: by the current context.
thread_local int t_route = -1;
// The context the call uses on its server when the thread's is elsewhere.
thread_local uint64_t t_context = 0;

// Bits 40 to 47 of a handle id hold its server plus one. Ids count up from
// 0x1000 in steps of 16 and stay far below them. NVML's ids are the NVML
// stand-in's own (nvml/runtime.cc), which routes them itself.
constexpr int kServerShift = 40;
constexpr uint64_t kServerMask = uint64_t{0xff} << kServerShift;

uint32_t context_server() {
  CUdevice dev = 0;
  DeviceHome home;
  if (current_device(&dev) && device_home(dev, &home)) return home.server;
  return 0;
}

}  // namespace

uint32_t routed_server() {
  if (!several_servers()) return 0;
  return t_route >= 0 ? static_cast<uint32_t>(t_route) : context_server();
}

bool routed_context(uint64_t* id) {
  if (!several_servers() || t_route < 0 || static_cast<uint32_t>(t_route) == context_server()) {
    *id = current_context_id();
    return true;
  }
  *id = t_context;
  return t_context != 0;
}

CUdevice local_device(CUdevice dev) {
  DeviceHome home;
  if (!several_servers() || !device_home(dev, &home)) return dev;
  return home.local;
}

CUmemLocation Route::location(CUmemLocation location) {
  if (location.type != CU_MEM_LOCATION_TYPE_DEVICE) return location;
  device(location.id);
  location.id = local_device(location.id);
  return location;
}

uint64_t tag_handle(uint64_t id) {
  if (!several_servers()) return id;
  return (id & ~kServerMask) | (uint64_t{routed_server() + 1} << kServerShift);
}

bool handle_server(uint64_t id, uint32_t* server) {
  const uint64_t tag = (id & kServerMask) >> kServerShift;
  if (tag == 0 || tag > server_count()) return false;
  *server = static_cast<uint32_t>(tag - 1);
  return true;
}

Route::Route() {
  if (!several_servers()) return;
  saved_ = t_route;
  saved_context_ = t_context;
}

Route::~Route() {
  if (saved_ == -2) return;
  t_route = saved_;
  t_context = saved_context_;
}

void Route::to(uint32_t server) {
  if (saved_ == -2) return;  // one server: nothing to route
  const int s = static_cast<int>(server);
  if (chosen_ >= 0 && chosen_ != s) {
    ok_ = false;
    other_ = s;
    return;
  }
  chosen_ = s;
  t_route = s;
}

void Route::device(CUdevice dev) {
  DeviceHome home;
  if (several_servers() && device_home(dev, &home)) to(home.server);
}

void Route::handle(uint64_t id) {
  uint32_t server = 0;
  if (several_servers() && handle_server(id, &server)) to(server);
}

void Route::device_memory(CUdevice dev) {
  DeviceHome home;
  if (saved_ == -2 || !device_home(dev, &home)) return;
  if (home.server != context_server())
    t_context = reinterpret_cast<uintptr_t>(primary_context(dev));
  to(home.server);
}

void Route::address(uint64_t address) {
  CUdevice dev = 0;
  if (saved_ != -2 && placed_device(address, &dev)) device_memory(dev);
}

CUresult Route::refuse(const char* name) const {
  spdlog::error(
      "{} names objects of two servers ({} and {}): scuda runs a call on one server; "
      "copy the data to one server first (cuMemcpyPeer does)",
      name, chosen_, other_);
  return CUDA_ERROR_NOT_SUPPORTED;
}

}  // namespace scuda::client
