// One client's session, in its own process: owns the driver, the handle map
// and the connection, and dispatches each request frame to its handler.
#pragma once

#include <chrono>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "common/compression.h"
#include "common/driver_table.h"
#include "common/socket.h"
#include "common/tls.h"
#include "protocol/frame.h"
#include "protocol/frame_io.h"
#include "protocol/handshake.h"
#include "server/copies/lanes.h"
#include "server/copies/peer_copies.h"
#include "server/copies/staging.h"
#include "server/listener/tokens.h"
#include "server/memory/host_mirrors.h"
#include "server/memory/ipc_exports.h"
#include "server/memory/va_space.h"
#include "server/session/handler.h"
#include "server/session/handles.h"
#include "server/session/heartbeat.h"
#include "server/session/session_output.h"
#include "server/status/session_table.h"

namespace scuda::server {

struct SessionOptions {
  Tokens tokens;        // none: no token required
  std::string job_key;  // the key job tokens are minted with; "": none taken
  // The server's TLS (docs/protocol.md, "TLS"); null: connections are plain.
  std::shared_ptr<const tls::Context> tls;
  std::string driver_path;  // empty: search the usual places
  // The listener's --max-sessions (0: none), for what a queued client is told.
  int max_sessions = 0;
  // A connection that has not finished its handshake by then is closed, so
  // that silent connections do not hold processes.
  std::chrono::milliseconds handshake_timeout{std::chrono::seconds(10)};
  // Where the session reports itself (status/session_table.h); either may
  // be null, and then nothing is reported.
  SessionTable* table = nullptr;
  SessionSlot* slot = nullptr;
  // The UUIDs of the GPUs the server offers, in its driver's order: what a
  // client's CUDA_VISIBLE_DEVICES chooses from (visible_devices.h).
  std::vector<std::string> offered_gpus;
  // Whether sessions copy to and from other servers' sessions directly
  // (peer_copies.h); off, the server neither dials out nor takes such
  // copies, and clients stage them through themselves.
  bool peer_copies = true;
};

class Session {
 public:
  Session(Socket socket, SessionOptions options);

  // Serves the client until it goes away or breaks the protocol; returns the
  // process exit code.
  int run();
  // Serves requests as run() does after the handshake, with `driver` as the
  // driver: the ops fuzz harness (fuzz/ops_fuzz.cc) feeds every handler so.
  int serve_without_handshake(const DriverTable& driver);

  const DriverTable& driver() const { return driver_; }
  HandleTable& handles() { return handles_; }
  Staging& staging() { return staging_; }
  HostMirrors& mirrors() { return mirrors_; }
  VaSpace& va() { return va_; }
  IpcExports& ipc() { return ipc_; }
  Lanes& lanes() { return lanes_; }
  PeerCopies& peers() { return peers_; }
  // The server's --no-peer-copies, negated.
  bool peer_copies() const { return options_.peer_copies; }
  // The UUIDs of the GPUs the server offers (SessionOptions::offered_gpus).
  const std::vector<std::string>& offered_gpus() const { return options_.offered_gpus; }
  SessionReport& report() { return report_; }

  // For a handler that writes its own reply (and then returns kReplied):
  // the request being served, the reply's head for `size` bytes of data
  // (sent with the first `first` bytes of it, at `data`, in one system
  // call), and the rest of the data. begin_reply returns the result it
  // sent: on a synchronizing request a latched error replaces CUDA_SUCCESS,
  // and then no data is sent or may follow. false from send_data: the
  // connection is lost.
  const protocol::FrameHeader& request() const { return request_; }
  // For a handler that reads its bulk data itself (HandlerEntry::head): the
  // bytes of it not yet read, and reading them. false from read_data: the
  // connection is lost.
  size_t unread() const { return unread_; }
  bool read_data(void* dst, size_t size);
  CUresult begin_reply(size_t size, const void* data = nullptr, size_t first = 0);
  bool send_data(const void* data, size_t size);
  bool send_data(std::span<iovec> parts);
  // For a handler whose request is malformed in a way worth naming: returns
  // kMalformed, and the session's refusal says `why`.
  CUresult malformed(std::string why);
  // Memory for compressed copies, reused from request to request.
  compression::Scratch& scratch() { return scratch_; }
  // Keeps `rc` for the next synchronizing request, as a failed one-way
  // request's error is kept.
  void latch(CUresult rc);

 private:
  // What the connection opens with (server/session/session_door.cc): a handshake
  // to serve, a join's route (handed to its session), or nothing to serve.
  enum class Opening { kHello, kRouted, kEnd };
  // Runs TLS where the first bytes ask for it, then reads the first frame;
  // for kHello, *op is the first frame's, HELLO or a status request.
  Opening open_connection(protocol::Hello* hello, uint64_t* request_id, uint32_t* op);
  // The server's half of a TLS handshake on the connection.
  bool start_tls();
  // Hands a join's connection to the session its route names.
  bool route(const protocol::Frame& f);
  // The handshake's first half: decodes and checks the Hello in `f`.
  bool check_hello(const protocol::Frame& f, protocol::Hello* hello);
  // Waits in the admission queue for a place; false when the session ends there.
  bool take_place(uint64_t request_id);
  bool drop_job_token(uint64_t request_id);
  bool dropped_meanwhile(uint64_t request_id);
  // A session's handshake: loads the driver and sends the welcome.
  bool welcome(const protocol::Hello& hello, uint64_t request_id);
  bool apply_visible(const std::string& list, uint64_t request_id);
  // Reads requests and serves them until the client goes away (0) or
  // breaks the protocol (1).
  int serve_requests();
  // Reads the request's payload (its head, for a handler that reads the
  // rest itself) and serves it; false when the session must end.
  bool serve_one(const protocol::FrameHeader& request);
  // The result to reply with, after the latched error rules.
  CUresult settle(CUresult rc);
  // Sends, ahead of a synchronizing reply, what the session printed
  // (kernels' printf) and, when the client asks, what the device changed in
  // the mirrors it keeps in step.
  bool relay_output();
  void refuse(uint64_t request_id, const std::string& message,
              protocol::ErrorKind kind = protocol::kErrorFatal);

  Socket socket_;
  protocol::FrameReader reader_{socket_};
  SessionOptions options_;
  SessionReport report_{options_.table, options_.slot};
  Token token_;  // the token the client gave (unnamed and unlimited when none is needed)
  DriverTable driver_;
  HandleTable handles_;
  // The first error of a one-way request, returned by the next
  // synchronizing request.
  CUresult latched_ = CUDA_SUCCESS;
  protocol::FrameHeader request_;
  // The request's payload (or head), in a buffer that grows without being
  // zero-filled first: every byte is read from the socket.
  std::unique_ptr<uint8_t[]> payload_;
  size_t payload_room_ = 0;
  size_t unread_ = 0;
  bool lost_ = false;  // a handler's own reply or data read failed
  std::string malformed_why_;
  compression::Scratch scratch_;
  Staging staging_{driver_};
  HostMirrors mirrors_;
  VaSpace va_;
  IpcExports ipc_;
  Lanes lanes_{driver_, socket_.fd()};
  PeerCopies peers_;
  SessionOutput output_;
  Heartbeat heartbeat_;
};

}  // namespace scuda::server
