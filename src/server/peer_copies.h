// Copies between the sessions of two servers (docs/protocol.md, "Copies
// between servers"): the bytes of a device-to-device copy whose ends are on
// two servers go from one session to the other directly, not through the
// client. The session the bytes go to has an inbox, a join point; the
// session they come from dials that server as a join of the inbox, once
// per copy, and sends the copy's id, its size, then its bytes.
#pragma once

#include <cuda.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>

#include "common/driver_table.h"
#include "common/socket.h"
#include "server/join_point.h"
#include "server/staging.h"

namespace scuda::server {

class PeerInbox {
 public:
  // Opens the inbox the first time; says the name and the secret that a
  // sending session's join must carry.
  bool open(std::string* name, std::string* secret, std::string* error);
  // The connection that brings copy `id` of `size` bytes, once it has come,
  // its header read; an invalid socket when none did within `limit`.
  // Connections that bring another copy are closed.
  Socket take_copy(uint64_t id, uint64_t size, std::chrono::milliseconds limit);

 private:
  bool take(Socket peer);

  JoinPoint join_;
  std::mutex mu_;  // guards arrived_
  std::condition_variable cv_;
  std::deque<Socket> arrived_;
};

// Where a sending session sends a copy: the other server's address, as the
// client reached it, and what its inbox's join must carry.
struct PeerAddress {
  std::string address;  // HOST:PORT
  std::string token;
  std::string name;
  std::string secret;
};

// Sends the `size` bytes at device address `src` (the current context's)
// as copy `id` to the inbox at `to`, through `stage`, and returns the
// inbox's result; CUDA_ERROR_NOT_SUPPORTED, with *why, when that server
// cannot be reached or refuses.
CUresult send_to_peer(const DriverTable& d, Staging& stage, CUdeviceptr src, uint64_t size,
                      uint64_t id, const PeerAddress& to, std::string* why);

// Reads the bytes of a copy from `peer` into device address `dst` (the
// current context's), through `stage`, and answers the sender with the
// result, which it returns. A failed write drains the rest of the bytes.
CUresult receive_from_peer(const DriverTable& d, Staging& stage, Socket& peer, CUdeviceptr dst,
                           uint64_t size);

}  // namespace scuda::server
