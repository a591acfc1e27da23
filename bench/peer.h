// The raw-TCP counterpart of each scuda figure: a peer that echoes, sinks
// or sources bytes, and the client side that times it over the same link.
//
// Wire format, per request on one connection: u8 command, u64 n (host order;
// both ends are this program), then
//   'E' n bytes, echoed back;  'S' n bytes, answered by one byte;
//   'R' nothing, answered by n bytes;
//   'P' as 'E', then the peer spins for the next request for kWaitSpin before
//       it sleeps, as a scuda session does after a reply.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "common/socket.h"
#include "timing.h"

namespace scuda::bench {

// Serves peers on `listen` until killed; returns only on a setup error.
int run_echo_server(const std::string& listen);
// Serves a peer on a free loopback port from a thread; returns its address.
std::string start_local_echo();

class RawLink {
 public:
  // Connects to a peer at `address` ("HOST:PORT"); throws on failure.
  explicit RawLink(const std::string& address);

  // Seconds per 4-byte ping-pong; with `spin`, both ends spin for the
  // next message that long before they sleep, as scuda's waits do.
  std::vector<double> ping(const Plan& plan, std::chrono::microseconds spin = {});
  // Seconds per `bytes` sent to the sink (until its answer) / read from it.
  std::vector<double> upload(size_t bytes, const Plan& plan);
  std::vector<double> download(size_t bytes, const Plan& plan);

  // One transfer, untimed.
  void send(const char* data, size_t bytes);
  void receive(char* data, size_t bytes);

 private:
  void request(char command, size_t n);
  Socket socket_;
};

// Several connections to the peer, each moving its share of a transfer on
// a thread of its own: what scuda's lanes are measured against.
class RawLinks {
 public:
  RawLinks(const std::string& address, size_t count);

  std::vector<double> upload(size_t bytes, const Plan& plan);
  std::vector<double> download(size_t bytes, const Plan& plan);

 private:
  // Seconds for every link to move its share of `data` by `move`.
  template <class Move>
  double in_parallel(char* data, size_t bytes, Move move);
  std::vector<RawLink> links_;
};

}  // namespace scuda::bench
