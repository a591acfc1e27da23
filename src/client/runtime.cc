#include "client/runtime.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include <spdlog/spdlog.h>

#include "client/contexts/context.h"
#include "client/managed/coherent_pages.h"
#include "client/memory/registered_memory.h"
#include "client/pools/route.h"
#include "client/state.h"
#include "client/stats.h"
#include "client/streams/work_epoch.h"
#include "client/transport/session.h"
#include "common/config.h"
#include "common/lock_order.h"
#include "protocol/frame.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace parts {

// NVIDIA's driver, when no server is configured and the client passes every
// call through to it.
struct LocalDriver {
  LocalDriver() {
    if (!load_driver("", &table, &error))
      spdlog::error("no scuda server is configured (SCUDA_SERVER or ~/.config/scuda/host) and {}",
                    error);
  }
  DriverTable table;
  std::string error;
};

}  // namespace parts

namespace {

parts::LocalDriver& local() { return client_state().local_driver.get(); }

std::atomic<bool> g_exiting{false};

}  // namespace

bool passthrough() { return pass_through(); }

// The mark is registered after logging is set up, so at exit it is set
// before spdlog's registry (and anything constructed earlier) is destroyed.
bool exiting() {
  static const bool watching = [] {
    pass_through();  // sets up logging
    g_watch_entries.store(spdlog::should_log(spdlog::level::trace) || stats::enabled(),
                          std::memory_order_relaxed);
    std::atexit([] { g_exiting.store(true, std::memory_order_release); });
    return true;
  }();
  return watching && g_exiting.load(std::memory_order_acquire);
}

const DriverTable& local_driver() { return local().table; }

std::atomic<bool> g_watch_entries{false};

void watch_entry(const char* name) {
  if (spdlog::should_log(spdlog::level::trace)) spdlog::trace("{}", name);
  if (stats::enabled()) stats::count_call(name);
}

CUresult unsupported(const char* name, const char* why) {
  if (stats::enabled()) stats::count_unsupported(name);
  static RankedMutex mu{LockRank::kLeaf, "unsupported"};
  static auto* seen = new std::set<std::string>;  // never freed: may be used during exit
  std::lock_guard lock(mu);
  if (seen->insert(name).second)
    spdlog::warn("{} is not supported by scuda{}{}; it returns CUDA_ERROR_NOT_SUPPORTED", name,
                 why ? ": " : " yet", why ? why : "");
  return CUDA_ERROR_NOT_SUPPORTED;
}

CUresult bad_reply(const char* name) {
  spdlog::error("malformed reply from the server to {}", name);
  return CUDA_ERROR_UNKNOWN;
}

uint64_t new_shared_handle_id() {
  // Ids step by 16 from 0x1000 so they look like aligned pointers and stay
  // clear of NULL, CU_STREAM_LEGACY and CU_STREAM_PER_THREAD.
  static std::atomic<uint64_t> next{0x1000};
  return next.fetch_add(16);
}

uint64_t new_handle_id() { return tag_handle(new_shared_handle_id()); }

bool sync_routed_context(Connection* conn) {
  // A context of another server is unknown there (route.h).
  uint64_t context = 0;
  return !routed_context(&context) || conn->sync_context(context);
}

namespace {

// With the connection's lock held: makes the thread's context current on the
// server, then sends.
bool send_in_context(Connection* conn, uint32_t op, uint16_t flags, const protocol::Writer& request,
                     uint64_t* id) {
  if (spdlog::should_log(spdlog::level::trace))
    spdlog::trace("op {} ({})", op, protocol::op_name(op));
  return sync_routed_context(conn) &&
         conn->send(op, flags, request.data().data(), request.size(), nullptr, 0, id);
}

// Requests that cannot change memory the host mirrors (coherent_pages.h):
// allocation and module setup, which programs do before touching data.
bool may_start_device_work(uint32_t op) {
  switch (op) {
    case protocol::kOp_cuMemAllocManaged:
    case protocol::kOp_cuMemAlloc_v2:
    case protocol::kOp_cuMemGetInfo_v2:
    case protocol::kOpModuleLoad:
    case protocol::kOpLibraryLoad:
    case protocol::kOpModuleGetFunction:
    case protocol::kOpLibraryGetKernel:
    case protocol::kOpKernelGetFunction:
    case protocol::kOpPointerAttributes:
    case protocol::kOpHostRegister:
    case protocol::kOpHostUnregister:
    case protocol::kOpVaReserve:
    case protocol::kOpVaMap:
    case protocol::kOpVaFree:
    case protocol::kOpVaSync:
    case protocol::kOpLanes: return false;
  }
  return true;
}

// Questions and waits about work already sent: they enqueue nothing, so
// what is known of finished work stays true (finished_work.cc). They still
// push the host's changes, which running kernels may be waiting for.
bool waits_only(uint32_t op) {
  switch (op) {
    case protocol::kOp_cuStreamQuery:
    case protocol::kOp_cuStreamQuery_ptsz:
    case protocol::kOp_cuStreamSynchronize:
    case protocol::kOp_cuStreamSynchronize_ptsz:
    case protocol::kOp_cuEventQuery:
    case protocol::kOp_cuEventSynchronize:
    case protocol::kOp_cuCtxSynchronize:
    case protocol::kOp_cuCtxSynchronize_v2: return true;
  }
  return false;
}

// Requests that enqueue or order work but write no memory the host mirrors:
// frees, stream-ordered allocation, events and stream waits. Sent between a
// host write and the next, they leave the host's managed pages valid.
bool writes_no_memory(uint32_t op) {
  switch (op) {
    case protocol::kOp_cuMemFree_v2:
    case protocol::kOp_cuMemFreeAsync:
    case protocol::kOp_cuMemFreeAsync_ptsz:
    case protocol::kOp_cuMemAllocAsync:
    case protocol::kOp_cuMemAllocAsync_ptsz:
    case protocol::kOp_cuEventRecord:
    case protocol::kOp_cuEventRecord_ptsz:
    case protocol::kOp_cuEventRecordWithFlags:
    case protocol::kOp_cuEventRecordWithFlags_ptsz:
    case protocol::kOp_cuStreamWaitEvent:
    case protocol::kOp_cuStreamWaitEvent_ptsz:
    case protocol::kOp_cuStreamCreate:
    case protocol::kOp_cuStreamCreateWithPriority:
    case protocol::kOp_cuStreamDestroy_v2:
    case protocol::kOp_cuEventCreate:
    case protocol::kOp_cuEventDestroy_v2: return true;
  }
  return false;
}

// With the connection's lock held, before `op` is sent.
void before_sending(Connection& conn, uint32_t op) {
  const bool device_work = may_start_device_work(op);
  std::optional<coherence::NoManagedWrites> confined;
  if (device_work && (waits_only(op) || writes_no_memory(op))) confined.emplace();
  coherence::before_request(conn, device_work);
  if (device_work && !waits_only(op)) work_sent();
}

bool whole_context_sync(uint32_t op) {
  return op == protocol::kOp_cuCtxSynchronize || op == protocol::kOp_cuCtxSynchronize_v2;
}

}  // namespace

CUresult call(uint32_t op, const protocol::Writer& request, std::vector<uint8_t>* reply,
              bool synchronizing) {
  return with_connection([&](Connection& conn) {
    before_sending(conn, op);
    uint64_t id = 0;
    const auto flags = static_cast<uint16_t>(
        synchronizing ? protocol::kSynchronizing | registered::want_changes() : 0);
    if (!send_in_context(&conn, op, flags, request, &id)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
    CUresult rc = conn.receive(id, reply);
    if (synchronizing) coherence::after_sync(conn, whole_context_sync(op));
    if (synchronizing && rc == CUDA_SUCCESS) rc = conn.take_deferred_error();
    if (rc != CUDA_SUCCESS)
      spdlog::debug("op {} returned {}", protocol::op_name(op), static_cast<int>(rc));
    return rc;
  });
}

CUresult call_later(uint32_t op, const protocol::Writer& request, uint64_t* id,
                    Connection::ReplyHandler handle) {
  return with_connection([&](Connection& conn) {
    before_sending(conn, op);
    if (!send_in_context(&conn, op, 0, request, id)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
    conn.handle_later(*id, std::move(handle));
    return CUDA_SUCCESS;
  });
}

CUresult post(uint32_t op, const protocol::Writer& request, uint64_t* id) {
  return with_connection([&](Connection& conn) {
    before_sending(conn, op);
    return send_in_context(&conn, op, protocol::kOneWay, request, id)
               ? CUDA_SUCCESS
               : CUDA_ERROR_DEVICE_UNAVAILABLE;
  });
}

CUresult settle(uint64_t id) {
  return with_connection([&](Connection& conn) { return conn.settle(id); });
}

}  // namespace scuda::client
