// One client's session, in its own process: owns the driver, the handle map
// and the connection, and dispatches each request frame to its handler.
#pragma once

#include <string>

#include "common/driver_table.h"
#include "common/socket.h"
#include "protocol/frame.h"
#include "protocol/handshake.h"
#include "server/handler.h"
#include "server/handles.h"
#include "server/host_mirrors.h"
#include "server/session_output.h"
#include "server/staging.h"

namespace scuda::server {

struct SessionOptions {
  std::string token;        // empty: no token required
  std::string driver_path;  // empty: search the usual places
  // Set when the listener is at its limit of this many sessions: then only
  // a callback channel's join is served (a brief process, for a session
  // that already counts).
  int full_at = 0;
};

// What a client is told when the server is at its limit of sessions.
std::string at_limit_message(int max_sessions);

class Session {
 public:
  Session(Socket socket, SessionOptions options);

  // Serves the client until it goes away or breaks the protocol; returns the
  // process exit code.
  int run();

  const DriverTable& driver() const { return driver_; }
  HandleTable& handles() { return handles_; }
  Staging& staging() { return staging_; }
  HostMirrors& mirrors() { return mirrors_; }

  // For a handler that writes its own reply (and then returns kReplied):
  // the request being served, the reply's head for `size` bytes of data,
  // and the data. begin_reply returns the result it sent: on a
  // synchronizing request a latched error replaces CUDA_SUCCESS, and then
  // no data may follow. false from send_data: the connection is lost.
  const protocol::FrameHeader& request() const { return request_; }
  CUresult begin_reply(size_t size);
  bool send_data(const void* data, size_t size);
  // Keeps `rc` for the next synchronizing request, as a failed one-way
  // request's error is kept.
  void latch(CUresult rc);

 private:
  // The handshake's first half: decodes and checks the Hello.
  bool read_hello(protocol::Hello* hello, uint64_t* request_id);
  // A session's handshake: loads the driver and sends the welcome.
  bool welcome(const protocol::Hello& hello, uint64_t request_id);
  // A callback channel's: hands the connection to the session it joins.
  bool join(const protocol::Hello& hello, uint64_t request_id);
  bool serve_one(const protocol::Frame& request);
  // The result to reply with, after the latched error rules.
  CUresult settle(CUresult rc);
  // Sends what the session printed (kernels' printf) ahead of a reply.
  bool relay_output();
  void refuse(uint64_t request_id, const std::string& message);

  Socket socket_;
  SessionOptions options_;
  DriverTable driver_;
  HandleTable handles_;
  // The first error of a one-way request, returned by the next
  // synchronizing request.
  CUresult latched_ = CUDA_SUCCESS;
  protocol::FrameHeader request_;
  bool lost_ = false;  // a handler's own reply could not be written
  Staging staging_;
  HostMirrors mirrors_;
  SessionOutput output_;
};

}  // namespace scuda::server
