// SCUDA_STATS=1 (or SCUDA_STATS_JSON=FILE): what the program asked of the
// driver and what that cost on the wire, printed (or written) at exit.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace scuda::client::stats {

bool enabled();
// An entry point was called.
void count_call(const char* name);
// A frame for `op` left the client.
void count_send(uint32_t op, size_t bytes, bool one_way);
// The reply to `op` was read after `waited_ns`: one the program `awaited`
// (a round trip), or a deferred one read while awaiting another.
void count_reply(uint32_t op, size_t bytes, uint64_t waited_ns, bool awaited);
// The `bytes` of a copy `op` crossed the lanes (lanes.h): counted in the
// op's row (`outgoing`: to the server).
void count_lane_bytes(uint32_t op, size_t bytes, bool outgoing);
// A chunk of `op` of `raw_bytes` crossed lz4-compressed (`outgoing`: to the
// server); counted in the row "<op> lz4", whose bytes are those before
// compression, beside the op's own row of bytes on the wire.
void count_lz4(uint32_t op, size_t raw_bytes, bool outgoing);
// A call scuda cannot serve was made; counted in the row "<name> (not
// supported)".
void count_unsupported(const char* name);
// Client work named `name` (no request of its own: a fault's service, an
// mprotect) took `ns`; counted as a call of row `name`, its time as waited.
void count_time(const char* name, uint64_t ns);

// Counts its own lifetime with count_time(name) while stats are on; costs
// one branch when they are off.
class Timed {
 public:
  explicit Timed(const char* name) : name_(enabled() ? name : nullptr) {
    if (name_) start_ = std::chrono::steady_clock::now();
  }
  ~Timed() {
    if (name_)
      count_time(name_, std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::steady_clock::now() - start_)
                            .count());
  }
  Timed(const Timed&) = delete;
  Timed& operator=(const Timed&) = delete;

 private:
  const char* name_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace scuda::client::stats
