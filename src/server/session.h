// One client's session, in its own process: owns the driver, the handle map
// and the connection, and dispatches each request frame to its handler.
#pragma once

#include <string>

#include "common/driver_table.h"
#include "common/socket.h"
#include "protocol/frame.h"
#include "server/handler.h"
#include "server/handles.h"

namespace scuda::server {

struct SessionOptions {
  std::string token;        // empty: no token required
  std::string driver_path;  // empty: search the usual places
};

class Session {
 public:
  Session(Socket socket, SessionOptions options);

  // Serves the client until it goes away or breaks the protocol; returns the
  // process exit code.
  int run();

  const DriverTable& driver() const { return driver_; }
  HandleTable& handles() { return handles_; }

 private:
  bool handshake();
  bool serve_one(const protocol::Frame& request);
  void refuse(uint64_t request_id, const std::string& message);

  Socket socket_;
  SessionOptions options_;
  DriverTable driver_;
  HandleTable handles_;
  // The first error of a one-way request, returned by the next
  // synchronizing request.
  CUresult latched_ = CUDA_SUCCESS;
};

}  // namespace scuda::server
