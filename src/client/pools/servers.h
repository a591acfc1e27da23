// The session's servers: one, or several whose GPUs the program sees as one
// list of devices (SCUDA_SERVER="a:14833,b:14833" without SCUDA_PICK). The
// list runs through the first server's GPUs, then the next server's, each
// in its server's own order (docs/pools.md, "Several servers, one list").
#pragma once

#include <cuda.h>

#include <cstdint>
#include <vector>

#include "client/transport/connection.h"
#include "protocol/handshake.h"

namespace scuda::client {

// The most servers one program may use together.
constexpr uint32_t kMaxServers = 16;

// Where a device of the program's list lives: a server, and the device's
// number in that server's session.
struct DeviceHome {
  uint32_t server = 0;
  CUdevice local = 0;
};

// Called once, by the session, before any entry point can use a server:
// the open connections, in the list's order (at most kMaxServers).
// `visible`, when given, is the client's CUDA_VISIBLE_DEVICES over servers
// that offer all their GPUs (Connection::offer_all_gpus): the devices it
// picks from the whole list, in its order, are the program's. False, with
// nothing set, when it picks none.
bool set_servers(std::vector<Connection*> servers, const char* visible = nullptr);

// How many servers the session has; 0 before one is open.
uint32_t server_count();
// True when the session has more than one server: only then does a request
// need routing.
bool several_servers();
// Server `i`'s connection; nullptr when there is none.
Connection* server_connection(uint32_t i);

// The home of device `dev` of the program's list; false when it names none.
bool device_home(CUdevice dev, DeviceHome* home);

// True when devices `a` and `b` of the program's list live on two servers
// (never with one server).
bool on_two_servers(CUdevice a, CUdevice b);

// The program's number for device `local` of server `server`; `local` as
// it is when that names no device.
CUdevice global_device(uint32_t server, CUdevice local);

// What every server's Welcome says as one: every device, in the program's
// order, and the oldest driver among them.
const protocol::Welcome& merged_welcome();

}  // namespace scuda::client
