// A session's own services: its joins (lanes, the callback channel), host
// callbacks, user objects, driver logs, notifications, and copies between
// servers. (op_layouts.h says how these are used.)
#pragma once

#include <cstdint>
#include <string>
#include <tuple>

#include "protocol/layout.h"
#include "protocol/ops.h"

namespace scuda::protocol::op {

// Where a join must go and what it must carry (callback channel, lanes).
struct JoinPoint {
  std::string name;
  std::string secret;
  auto fields() { return std::tie(name, secret); }
};

// `wanted` lanes, each joining at the answer's join point.
struct Lanes {
  static constexpr Op kOp = kOpLanes;
  struct Request {
    uint32_t wanted = 0;
    auto fields() { return std::tie(wanted); }
  };
  using Reply = JoinPoint;
};

// The callback channel's join point.
struct CallbackChannel {
  static constexpr Op kOp = kOpCallbackChannel;
  using Request = Empty;
  using Reply = JoinPoint;
};

// The live mirrors' channel (docs/managed-memory.md, "Live mirrors"): its
// join point.
struct LiveChannel {
  static constexpr Op kOp = kOpLiveChannel;
  using Request = Empty;
  using Reply = JoinPoint;
};

// A user object whose destructor the client runs (over the callback
// channel, as callback `callback`), bound to the client's id.
struct UserObjectCreate {
  static constexpr Op kOp = kOpUserObjectCreate;
  struct Request {
    uint64_t proposed = 0;
    uint64_t callback = 0;
    uint32_t references = 0;
    uint32_t flags = 0;
    auto fields() { return std::tie(proposed, callback, references, flags); }
  };
  struct Reply {
    uint64_t object = 0;
    auto fields() { return std::tie(object); }
  };
};

// The session's driver log lines from `iterator` (all of them without one),
// in at most `capacity` bytes.
struct LogsDump {
  static constexpr Op kOp = kOpLogsDump;
  struct Request {
    uint8_t has_iterator = 0;
    uint32_t iterator = 0;
    uint64_t capacity = 0;
    uint32_t flags = 0;
    auto fields() { return std::tie(has_iterator, iterator, capacity, flags); }
  };
  struct Reply {
    uint32_t iterator = 0;
    std::string lines;
    auto fields() { return std::tie(iterator, lines); }
  };
};

// Driver log messages to the client's callback `proposed`, over the
// callback channel.
struct LogsRegister {
  static constexpr Op kOp = kOpLogsRegister;
  struct Request {
    uint64_t proposed = 0;
    auto fields() { return std::tie(proposed); }
  };
  struct Reply {
    uint64_t handle = 0;
    auto fields() { return std::tie(handle); }
  };
};

// The driver's asynchronous notifications of `device`, to the client's
// callback `proposed` over the callback channel.
struct AsyncNotificationRegister {
  static constexpr Op kOp = kOpAsyncNotificationRegister;
  struct Request {
    uint32_t device = 0;
    uint64_t proposed = 0;
    auto fields() { return std::tie(device, proposed); }
  };
  struct Reply {
    uint64_t handle = 0;
    auto fields() { return std::tie(handle); }
  };
};

// One-way: the client's host callback `callback` takes its place in
// `stream` (`mode`'s per-thread bit: the per-thread default stream).
struct HostCallback {
  static constexpr Op kOp = kOpHostCallback;
  struct Request {
    uint64_t stream = 0;
    uint8_t mode = 0;
    uint64_t callback = 0;
    auto fields() { return std::tie(stream, mode, callback); }
  };
  using Reply = Empty;
};

// The join point where another server's session sends copies to this one.
struct PeerInbox {
  static constexpr Op kOp = kOpPeerInbox;
  using Request = Empty;
  using Reply = JoinPoint;
};

// Sends [src, src + size) of the current context's device, as copy `id`,
// to the session at `address` (with its token) through its inbox `inbox`;
// after the work queued before it.
struct PeerSend {
  static constexpr Op kOp = kOpPeerSend;
  struct Request {
    uint64_t src = 0;
    uint64_t size = 0;
    uint64_t id = 0;
    std::string address;
    std::string token;
    JoinPoint inbox;
    // The SHA-256 of the destination's certificate as the client's TLS
    // handshake saw it; empty when the client reaches it over plain TCP.
    std::string certificate;
    auto fields() {
      return std::tie(src, size, id, address, token, inbox.name, inbox.secret, certificate);
    }
  };
  using Reply = Empty;
};

// Waits for copy `id` from another session and writes its bytes to
// [dst, dst + size) of the current context's device.
struct PeerReceive {
  static constexpr Op kOp = kOpPeerReceive;
  struct Request {
    uint64_t dst = 0;
    uint64_t size = 0;
    uint64_t id = 0;
    auto fields() { return std::tie(dst, size, id); }
  };
  using Reply = Empty;
};

}  // namespace scuda::protocol::op
