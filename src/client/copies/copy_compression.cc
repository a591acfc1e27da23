#include "client/copies/copy_compression.h"

#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/stats.h"
#include "protocol/compressed_pieces.h"
#include "protocol/ops.h"

namespace scuda::client::copy_compression {

namespace {

using compression::Mode;

// Chunks this small always go raw: lz4 could save little more than the
// bytes that say it was used.
constexpr size_t kSmallest = 4u << 10;
// What a device-to-host chunk is hoped to shrink to, since the client
// cannot see it before asking.
constexpr double kHopedRatio = 0.5;

Mode from_env() {
  Mode m = Mode::kAuto;
  const char* env = std::getenv("SCUDA_COMPRESS");
  if (env && *env && !compression::parse_mode(env, &m))
    spdlog::warn("SCUDA_COMPRESS='{}' is not off, auto or on; using auto", env);
  return m;
}

std::atomic<Mode>& current() {
  static std::atomic<Mode> m{from_env()};
  return m;
}

compression::LinkRate up, down;

CUresult decode(protocol::Reader& reply, void* dst, size_t size) {
  std::string why;
  if (!protocol::read_pieces(reply, static_cast<uint8_t*>(dst), size, &why)) {
    spdlog::error("a compressed memcpy-dtoh reply does not decode: {}", why);
    return CUDA_ERROR_UNKNOWN;
  }
  if (stats::enabled()) stats::count_lz4(protocol::kOpMemcpyDtoH, size, false);
  return CUDA_SUCCESS;
}

}  // namespace

Mode mode() { return current().load(std::memory_order_relaxed); }
void set_mode(Mode m) { current().store(m, std::memory_order_relaxed); }

Chunk outgoing(const void* data, size_t size) {
  const Chunk raw{false, data, size};
  const Mode m = mode();
  if (m == Mode::kOff || size < kSmallest) return raw;
  // The sample costs a little: taken only when even the best ratio would pay.
  if (m == Mode::kAuto &&
      !(compression::pays(up.get(), 0) && up.compress(size, compression::sample_ratio(data, size))))
    return raw;
  static compression::Scratch buffer;  // used under the connection's lock
  uint8_t* block = buffer.get(compression::bound(size));
  const size_t n = compression::compress(data, size, block);
  if (!n) return raw;
  if (stats::enabled()) stats::count_lz4(protocol::kOpMemcpyHtoD, size, true);
  return {true, block, n};
}

bool may_compress_up(size_t size) {
  const Mode m = mode();
  return m == Mode::kOn || (m == Mode::kAuto && up.compress(size, 0));
}

bool ask_compressed(size_t size) {
  const Mode m = mode();
  if (m == Mode::kOff || size < kSmallest) return false;
  return m == Mode::kOn || down.compress(size, kHopedRatio);
}

CUresult receive(Connection& conn, uint64_t id, void* dst, size_t size) {
  std::vector<uint8_t> payload;
  const CUresult rc = conn.receive(id, &payload);
  if (rc != CUDA_SUCCESS) return rc;
  protocol::Reader reply(payload);
  return decode(reply, dst, size);
}

void deliver_later(Connection& conn, uint64_t id, void* dst, size_t size) {
  conn.handle_later(id, [dst, size](CUresult rc, protocol::Reader& reply) {
    return rc == CUDA_SUCCESS ? decode(reply, dst, size) : rc;
  });
}

void sent(size_t bytes, double seconds) { up.observe(bytes, seconds); }
void received_raw(size_t bytes, double seconds) { down.observe(bytes, seconds); }

}  // namespace scuda::client::copy_compression

// For benchmarks and tests: switches SCUDA_COMPRESS's mode ("off", "auto" or
// "on") from now on; -1 for another word.
extern "C" __attribute__((visibility("default"))) int scuda_set_compression(const char* mode) {
  scuda::compression::Mode m;
  if (!mode || !scuda::compression::parse_mode(mode, &m)) return -1;
  scuda::client::copy_compression::set_mode(m);
  return 0;
}
