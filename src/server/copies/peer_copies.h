// Copies between the sessions of two servers (docs/protocol.md, "Copies
// between servers"): the bytes of a device-to-device copy whose ends are on
// two servers go from one session to the other directly, not through the
// client. The session the bytes go to has an inbox, a join point; the
// session they come from dials that server as joins of the inbox, one per
// stripe of the copy (stripes_of), and sends each stripe's header, then its
// bytes, from a thread of its own, so that one stripe's read from the
// device runs while another's bytes are on the wire and several TCP
// streams carry the copy. Both ends keep a stripe's connection once its
// copy is done, for the next copy between the two sessions: a copy that
// finds one saves the dial and the handshake, which a small copy cannot
// afford.
#pragma once

#include <cuda.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/driver_table.h"
#include "common/socket.h"
#include "server/session/join_point.h"

namespace scuda::server {

// How a copy of `size` bytes is cut: one stripe per kPeerMinStripe begun,
// at most kPeerStreams, each of `length` bytes (the last one shorter); both
// sessions cut it the same way.
struct Stripes {
  uint32_t count = 1;
  uint64_t length = 0;
};
inline constexpr uint32_t kPeerStreams = 4;
inline constexpr uint64_t kPeerMinStripe = 4u << 20;
Stripes stripes_of(uint64_t size);

// What each stripe's connection sends first, for each copy. Both sessions
// run the same build (the join's handshake checks the protocol version), so
// the struct crosses as its bytes.
struct PeerCopyHeader {
  uint64_t id;
  uint64_t size;
  uint32_t stripe;
  uint32_t stripes;
};

// The session's side of copies between servers: the inbox that other
// sessions send copies to, the host buffers its stripes pass through, and
// the connections kept from earlier copies, at both ends.
class PeerCopies {
 public:
  // Opens the inbox the first time; says the name and the secret that a
  // sending session's join must carry.
  bool open(std::string* name, std::string* secret, std::string* error);
  // The connections that bring the stripes of copy `id` of `size` bytes, in
  // stripe order, each header read, once all have come; empty when they
  // did not within `limit`. Connections that bring anything else are closed.
  std::vector<Socket> take_stripes(uint64_t id, uint64_t size, std::chrono::milliseconds limit);
  // Stripe `i`'s buffer of kPeerChunk bytes, kept for the session's life;
  // nullptr if no memory could be had.
  uint8_t* buffer(uint32_t i);

  // Receiving: a stripe's connection whose copy is done, kept for the next
  // copy it brings; a thread of its own waits for that copy's header.
  void await_next(Socket peer);
  // Sending: a connection kept for `destination` (its address and inbox)
  // that the other end has not closed; an invalid Socket when there is none.
  Socket kept(const std::string& destination);
  // Sending: keeps a connection whose copy is done, up to kPeerStreams for
  // each destination.
  void keep(const std::string& destination, Socket peer);

 private:
  // A connection that came to the inbox, and its copy's header where a
  // kept connection's thread has already read it.
  struct Arrival {
    Socket socket;
    bool has_header = false;
    PeerCopyHeader header{};
  };
  // Shared with the threads of kept connections, which may outlive the
  // session's objects at the process's end.
  struct Arrivals {
    std::mutex mu;
    std::condition_variable cv;
    std::deque<Arrival> queue;
    void add(Arrival a);
  };
  bool take(Socket peer);
  // The header of `a`'s copy, read within what is left until `deadline`.
  static bool header_of(Arrival& a, std::chrono::steady_clock::time_point deadline);

  JoinPoint join_;
  std::shared_ptr<Arrivals> arrived_ = std::make_shared<Arrivals>();
  std::mutex kept_mu_;  // guards kept_
  std::map<std::string, std::vector<Socket>> kept_;
  std::unique_ptr<uint8_t[]> buffers_[kPeerStreams];
};

// Where a sending session sends a copy: the other server's address, as the
// client reached it, and what its inbox's join must carry.
struct PeerAddress {
  std::string address;  // HOST:PORT
  std::string token;
  std::string name;
  std::string secret;
  // The SHA-256 of the certificate the client saw there over TLS; empty
  // when it reaches that server over plain TCP.
  std::string certificate;
};

// Sends the `size` bytes at device address `src` (the current context's)
// as copy `id` to the inbox at `to`, a stripe per connection, and returns
// the inbox's result; CUDA_ERROR_NOT_SUPPORTED, with *why, when that server
// cannot be reached or refuses.
CUresult send_to_peer(const DriverTable& d, PeerCopies& peers, CUdeviceptr src, uint64_t size,
                      uint64_t id, const PeerAddress& to, std::string* why);

// Reads the stripes of a copy from `stripes` (take_stripes' connections)
// into device address `dst` (the current context's), and answers each
// stripe's sender with that stripe's result; returns the first failure. A
// stripe whose write to the device fails drains the rest of its bytes.
CUresult receive_from_peer(const DriverTable& d, PeerCopies& peers, std::vector<Socket>& stripes,
                           CUdeviceptr dst, uint64_t size);

}  // namespace scuda::server
