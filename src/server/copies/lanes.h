// The session's lanes (docs/protocol.md, "Lanes"): more connections from
// the client, joined through the join point, that carry the bytes of large
// copies, so that a copy is not bound by what one TCP stream moves (on a
// fast link, one core's copying). Stripe i of a copy crosses lane
// i % lanes. Each lane has a thread and staging of its own; the session
// thread hands a copy to the lanes and waits until each has queued (to the
// device) or sent (to the host) its stripes, so that the copy keeps its
// place among the session's requests.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/driver_table.h"
#include "common/fan_out.h"
#include "common/socket.h"
#include "server/copies/staging.h"
#include "server/session/join_point.h"

namespace scuda::server {

class Lanes {
 public:
  // `main` is the client's connection: once it closes, a lane waiting for
  // the client stops waiting.
  Lanes(const DriverTable& d, int main);
  // Only at the session's end: a session is its own process, and its lane
  // threads last until it exits.
  ~Lanes();

  // Starts waiting for `wanted` lanes to join, the first time; says the name
  // and the secret that each join must carry.
  bool open(uint32_t wanted, std::string* name, std::string* secret, std::string* error);
  // Lanes joined so far; 0 once one was lost.
  uint32_t count();

  struct Copy {
    bool to_device;
    CUdeviceptr device;
    uint64_t size;
    CUstream stream;
    CUcontext context;  // the session thread's current one
    uint32_t lanes;     // how many carry it: at most count()
    // An error found before the copy: its bytes still cross, for nothing
    // (to the device, read and dropped; to the host, zeros).
    CUresult refused;
  };
  // Moves the copy's bytes over its lanes and returns the first error. Once
  // a lane is lost, every lane closes: CUDA_ERROR_DEVICE_UNAVAILABLE.
  CUresult run(const Copy& copy);

 private:
  struct Lane;
  bool take(Socket client);
  // Lane `index`'s stripes of the current copy.
  void part(size_t index);
  // false when the lane is lost.
  bool to_device(Lane& lane, size_t index, CUresult* rc);
  bool to_host(Lane& lane, size_t index, CUresult* rc);
  void finish(bool kept, CUresult rc);

  const DriverTable& d_;
  const int main_;
  JoinPoint join_;
  std::mutex mu_;  // guards what follows, but for copy_, which run() sets for the crew
  // Sized at open: a lane's place is filled when it joins.
  std::vector<std::unique_ptr<Lane>> lanes_;
  uint32_t joined_ = 0;
  std::unique_ptr<FanOut> crew_;
  Copy copy_{};
  CUresult result_ = CUDA_SUCCESS;
  bool lost_ = false;
};

}  // namespace scuda::server
