// What every client entry point (generated or hand-written) builds on: the
// mode (remote or pass-through), the connection, and client-chosen handles.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <vector>

#include "client/transport/connection.h"
#include "client/transport/session.h"
#include "common/driver_table.h"
#include "protocol/codec.h"
#include "protocol/handle_ids.h"

namespace scuda::client {

// True when no server is configured: every call goes to the local driver.
bool passthrough();
// The local driver, for pass-through mode.
const DriverTable& local_driver();

// True once the process has begun to exit past the client's teardown (its
// statics, spdlog's registry among them, may be destroyed). cudart and
// cuBLAS still call in from exit handlers registered before the driver was
// loaded; entry points then answer CUDA_ERROR_DEINITIALIZED and touch
// nothing, as NVIDIA's driver does once it has shut down.
bool exiting();

// Set once logging and stats are configured: whether entry points are
// logged at trace level or counted (SCUDA_STATS). Read on every call, so
// that a call neither traced nor counted costs one load.
extern std::atomic<bool> g_watch_entries;
// Logs an entry point at trace level and counts it for SCUDA_STATS.
void watch_entry(const char* name);
// Logs an entry point at trace level (SCUDA_LOG_LEVEL=trace), counts it.
inline void trace_entry(const char* name) {
  if (g_watch_entries.load(std::memory_order_relaxed)) watch_entry(name);
}

// Thread-locals on the path of every call, each a few bytes: initial-exec
// reads them at a fixed offset instead of calling __tls_get_addr. They stay
// far below the static TLS glibc keeps for libraries opened late.
#define SCUDA_HOT_TLS __attribute__((tls_model("initial-exec")))

// Logs the function's name and why it cannot be served (docs/coverage.md) once per
// process, counts it for --stats, and returns CUDA_ERROR_NOT_SUPPORTED.
CUresult unsupported(const char* name, const char* why = nullptr);
// Logs a malformed reply from the server and returns CUDA_ERROR_UNKNOWN.
CUresult bad_reply(const char* name);

// A fresh handle id, never 0, 1 or 2 (those are NULL, CU_STREAM_LEGACY and
// CU_STREAM_PER_THREAD), unique for the life of the process.
uint64_t new_handle_id();

// A fresh handle id for an object every server of the session holds under
// the same id (a library and its kernels): a call naming it goes to the
// server of the current context.
uint64_t new_shared_handle_id();

using protocol::handle_from_id;
using protocol::handle_id;

// With `conn`'s lock held: makes the context the thread's requests run in
// (route.h) current on conn's server, when it differs from the last one
// sent; false once the connection is lost.
bool sync_routed_context(Connection* conn);

// Sends request `op` and waits for its reply. Returns the CUresult the server
// reported and leaves the rest of the reply payload in *reply; or, without a
// reply, CUDA_ERROR_NOT_INITIALIZED before cuInit and
// CUDA_ERROR_DEVICE_UNAVAILABLE once the connection is lost. A synchronizing
// call also receives the first error of earlier one-way requests.
CUresult call(uint32_t op, const protocol::Writer& request, std::vector<uint8_t>* reply,
              bool synchronizing = false);

// Sends request `op` one-way: its error, if any, is returned by the next
// synchronizing call. *id, when asked for, is the request's id.
CUresult post(uint32_t op, const protocol::Writer& request, uint64_t* id = nullptr);

// Sends request `op` without waiting for its reply, which goes to `handle`
// when the client next waits for any reply (Connection::handle_later); an
// error is then returned by the next synchronizing call, as post's. *id is
// the request's id, for Connection::settle.
CUresult call_later(uint32_t op, const protocol::Writer& request, uint64_t* id,
                    Connection::ReplyHandler handle);

// Runs work(conn) with the connection's lock held and returns what it
// returns: the one way a request path takes the connection (call, post and
// the data paths that pipeline their own frames). CUDA_ERROR_NOT_INITIALIZED,
// without running work, before cuInit.
template <class Work>
CUresult with_connection(Work&& work) {
  Connection* conn = connection();
  if (!conn) return CUDA_ERROR_NOT_INITIALIZED;
  std::lock_guard lock(conn->mutex());
  return work(*conn);
}

// Waits until request `id`, sent without waiting (call_later), is answered;
// returns its failure, if any.
CUresult settle(uint64_t id);

}  // namespace scuda::client

// Every entry point starts here: refused during exit (see exiting()),
// traced, and in pass-through mode answered by the local driver's
// `name(args...)`.
#define SCUDA_PASSTHROUGH(name, ...)                                 \
  do {                                                               \
    if (::scuda::client::exiting()) return CUDA_ERROR_DEINITIALIZED; \
    ::scuda::client::trace_entry(#name);                             \
    if (::scuda::client::passthrough()) {                            \
      auto fn_ = ::scuda::client::local_driver().name;               \
      return fn_ ? fn_(__VA_ARGS__) : CUDA_ERROR_NOT_SUPPORTED;      \
    }                                                                \
  } while (0)
