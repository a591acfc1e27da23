// Host<->device copies. Data travels in chunks of protocol::kChunkSize:
// host-to-device chunks go one-way with only the last awaiting a reply, and
// device-to-host requests are all sent before the first reply is read, so
// the link stays busy in both directions. Chunks may cross lz4-compressed
// (copy_compression.h); the bytes of a large copy may cross the lanes
// instead (lanes.h).
#include <chrono>
#include <cstring>

#include "client/contexts/context.h"
#include "client/copies/copy_compression.h"
#include "client/copies/copy_mode.h"
#include "client/managed/coherent_pages.h"
#include "client/memory/host_memory.h"
#include "client/memory/memory.h"
#include "client/memory/registered_memory.h"
#include "client/pools/peers.h"
#include "client/pools/route.h"
#include "client/runtime.h"
#include "client/stats.h"
#include "client/streams/host_callbacks.h"
#include "client/streams/stream_capture.h"
#include "client/streams/work_epoch.h"
#include "client/transport/lane_copies.h"
#include "client/transport/lanes.h"
#include "client/transport/session.h"
#include "custom.h"
#include "forward.h"
#include "protocol/frame.h"
#include "protocol/op_layouts.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

using protocol::kChunkSize;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// A synchronous copy is a synchronizing call; an async one is not.
uint16_t sync_flag(uint8_t mode) {
  return mode & protocol::kCopyAsync ? 0 : protocol::kSynchronizing;
}

CUresult unified(CUdeviceptr dst, CUdeviceptr src, size_t size, CUstream stream, uint8_t mode);

// Page-locked memory: the program's blocks and its registered ranges, whose
// async copies read them in stream order.
bool page_locked(const void* p) {
  unsigned flags = 0;
  CUdeviceptr device = 0;
  return is_host_block(p) || registered::find(p, &flags, &device);
}

// The server refuses to capture a copy of client host memory, which a graph
// could not reach. An async copy it refused is then captured as a device
// copy from or into the memory's mirror in the session
// (registered_memory.h), which is pushed before each launch and pulled after
// the next synchronization.
bool captured(CUresult rc, uint8_t mode) {
  return rc == CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED && (mode & protocol::kCopyAsync);
}

CUresult through_mirror(CUdeviceptr device, const void* host, size_t size, CUstream stream,
                        uint8_t mode, bool to_device) {
  CUdeviceptr mirror = 0;
  if (CUresult rc = registered::mirror_for_device(host, size, &mirror); rc != CUDA_SUCCESS)
    return rc;
  const CUdeviceptr dst = to_device ? device : mirror;
  const CUdeviceptr src = to_device ? mirror : device;
  coherence::DeviceCopyInto into(dst, size);
  return mode & protocol::kCopyPerThread
             ? forward::cuMemcpyDtoDAsync_v2_ptsz(dst, src, size, stream)
             : forward::cuMemcpyDtoDAsync_v2(dst, src, size, stream);
}

// A copy's chunks, each a request with its bytes as the frame's tail; only
// the last may wait for its reply. Once the process has begun a capture,
// the first waits too: a refusal to capture (captured()) must come back
// before the other chunks, which would each leave one for the next
// synchronization to report.
CUresult chunks_to_device(Connection& conn, CUdeviceptr dst, const void* src, size_t size,
                          CUstream stream, uint8_t mode, bool wait) {
  size_t offset = 0;
  uint64_t last_id = 0;
  do {
    const size_t n = std::min(kChunkSize, size - offset);
    const bool last = offset + n == size;
    const bool probe = offset == 0 && !last && capture_active();
    const auto chunk = copy_compression::outgoing(static_cast<const uint8_t*>(src) + offset, n);
    const auto sent_mode =
        static_cast<uint8_t>(chunk.compressed ? mode | protocol::kCopyCompressed : mode);
    const protocol::Writer w = protocol::encode(
        protocol::op::MemcpyHtoD::Request{dst + offset, handle_id(stream), sent_mode, n});
    const uint16_t flags = (wait && last) || probe ? sync_flag(mode) : uint16_t{protocol::kOneWay};
    const auto start = Clock::now();
    if (!conn.send(protocol::kOpMemcpyHtoD, flags, w.data().data(), w.size(), chunk.data,
                   chunk.size, &last_id))
      return CUDA_ERROR_DEVICE_UNAVAILABLE;
    copy_compression::sent(chunk.size, seconds_since(start));
    offset += n;
    if (probe) {
      std::vector<uint8_t> reply;
      if (CUresult rc = conn.receive(last_id, &reply); rc != CUDA_SUCCESS) return rc;
    }
  } while (offset < size);
  if (!wait) return CUDA_SUCCESS;
  std::vector<uint8_t> reply;
  return conn.receive(last_id, &reply);
}

// How many lanes (lanes.h) a copy takes: none for a stream that is the
// calling thread's own, which the session's lane threads cannot name, nor
// when lz4 may pay, which lanes do not carry.
uint32_t lanes_for(size_t size, CUstream stream, uint8_t mode, bool to_device) {
  if (size < lanes::kSmallest || stream == CU_STREAM_PER_THREAD ||
      (!stream && (mode & protocol::kCopyPerThread)) || capture_active())
    return 0;
  // Lanes first: a copy that finds them open is where a probe of the link
  // (compression::LinkRate) gets measured.
  const uint32_t lanes = lanes::usable(size);
  if (!lanes) return 0;
  if (to_device ? copy_compression::may_compress_up(size) : copy_compression::ask_compressed(size))
    return 0;
  return lanes;
}

}  // namespace

// A copy whose bytes cross the lanes, while its request keeps its place on
// the connection. The replies owed are read first: the session sends them
// before it comes to this copy, and must not wait on a client that is busy
// with the lanes. Even when a lane breaks, the reply is read, so that the
// connection stays in step.
CUresult over_lanes(Connection& conn, uint32_t op, CUdeviceptr device, void* host, size_t size,
                    CUstream stream, uint8_t mode, uint32_t lanes, bool wait) {
  const bool to_device = op == protocol::kOpMemcpyHtoDLanes;
  conn.settle_all();
  const auto lane_mode =
      static_cast<uint8_t>(mode & (protocol::kCopyAsync | protocol::kCopySettled));
  const protocol::Writer w =
      protocol::encode(protocol::op::LaneCopy{device, handle_id(stream), lane_mode, size, lanes});
  uint64_t id = 0;
  const uint16_t flags = wait ? sync_flag(mode) : uint16_t{protocol::kOneWay};
  if (!conn.send(op, flags, w.data().data(), w.size(), nullptr, 0, &id) || !conn.flush())
    return CUDA_ERROR_DEVICE_UNAVAILABLE;
  const auto start = Clock::now();
  const bool moved = to_device ? lanes::send(host, size, lanes) : lanes::receive(host, size, lanes);
  if (to_device) copy_compression::sent(size, seconds_since(start));
  else copy_compression::received_raw(size, seconds_since(start));
  if (stats::enabled()) stats::count_lane_bytes(op, size, to_device);
  std::vector<uint8_t> reply;
  const CUresult rc = wait ? conn.receive(id, &reply) : CUDA_SUCCESS;
  return moved || rc != CUDA_SUCCESS ? rc : CUDA_ERROR_DEVICE_UNAVAILABLE;
}

namespace {

// The bytes are captured into the frames (or the lanes) at the call, which
// is all the driver promises for pageable sources, so a copy into memory
// the client knows goes one-way; its errors come back at the next
// synchronizing call. A copy elsewhere waits, so that the driver's answer
// comes back at once, and so does every copy once the process has begun a
// capture: the server refuses to capture host memory, and the copy is then
// captured through a mirror instead (through_mirror).
CUresult to_device(CUdeviceptr dst, const void* src, size_t size, CUstream stream, uint8_t mode) {
  if ((size && !src) || runs_past_mapped(dst, size)) return CUDA_ERROR_INVALID_VALUE;
  // Managed memory is the device's: never read here, under the lock.
  if (is_device_address(src))
    return unified(dst, reinterpret_cast<CUdeviceptr>(src), size, stream, mode);
  if ((mode & protocol::kCopyAsync) && page_locked(src)) wait_for_queued_callbacks();
  Route route;
  route.address(dst);
  route.handle(handle_id(stream));
  if (!route.ok()) return route.refuse("a copy to the device");
  const bool wait = !inside_allocation(dst, size) || capture_active();
  CUresult rc;
  {
    coherence::DeviceCopyInto into(dst, size);
    rc = with_connection([&](Connection& conn) {
      coherence::before_request(conn, true);
      work_sent();
      if (!sync_routed_context(&conn)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
      const uint32_t lanes = lanes_for(size, stream, mode, true);
      return lanes ? over_lanes(conn, protocol::kOpMemcpyHtoDLanes, dst, const_cast<void*>(src),
                                size, stream, mode, lanes, wait)
                   : chunks_to_device(conn, dst, src, size, stream, mode, wait);
    });
  }
  return captured(rc, mode) ? through_mirror(dst, src, size, stream, mode, true) : rc;
}

// A copy's chunks: every request is sent before the first reply is read.
// An async copy's replies are left to be delivered at the next call that
// waits for the server, so that it costs no round trip of its own (unless a
// capture has begun: see to_device).
CUresult chunks_to_host(Connection& conn, void* dst, CUdeviceptr src, size_t size, CUstream stream,
                        uint8_t mode) {
  struct Pending {
    uint64_t id;
    bool compressed;
  };
  std::vector<Pending> pending;
  size_t offset = 0;
  do {
    const size_t n = std::min(kChunkSize, size - offset);
    const bool compressed = copy_compression::ask_compressed(n);
    const auto sent_mode =
        static_cast<uint8_t>(compressed ? mode | protocol::kCopyCompressed : mode);
    const protocol::Writer w = protocol::encode(
        protocol::op::MemcpyDtoH::Request{src + offset, n, handle_id(stream), sent_mode});
    uint64_t id = 0;
    if (!conn.send(protocol::kOpMemcpyDtoH, sync_flag(mode), w.data().data(), w.size(), nullptr, 0,
                   &id))
      return CUDA_ERROR_DEVICE_UNAVAILABLE;
    uint8_t* into = static_cast<uint8_t*>(dst) + offset;
    if ((mode & protocol::kCopyAsync) && !capture_active()) {
      if (compressed) copy_compression::deliver_later(conn, id, into, n);
      else conn.deliver_later(id, into, n);
    } else {
      pending.push_back({id, compressed});
    }
    offset += n;
  } while (offset < size);
  CUresult first = CUDA_SUCCESS;
  offset = 0;
  // Each raw reply's arrival time measures the link. The first one's also
  // holds the server's start, a small share of a chunk on the links where
  // lz4 pays, and it keeps a copy of one chunk (a probe of the link,
  // compression::LinkRate) measured.
  auto start = Clock::now();
  for (size_t i = 0; i < pending.size(); ++i) {
    const size_t n = std::min(kChunkSize, size - offset);
    uint8_t* into = static_cast<uint8_t*>(dst) + offset;
    CUresult rc = pending[i].compressed ? copy_compression::receive(conn, pending[i].id, into, n)
                                        : conn.receive_into(pending[i].id, into, n);
    if (!pending[i].compressed) copy_compression::received_raw(n, seconds_since(start));
    start = Clock::now();
    if (first == CUDA_SUCCESS) first = rc;
    offset += n;
  }
  return first;
}

// A copy into registered memory that device work has named (any other range
// is ordinary host memory to copies: registered_memory.h) lands in its
// mirror in the session, and
// the bytes reach the program with the mirror's pull at the next
// synchronization (at once for a synchronous copy), as an async copy's
// bytes are due. The mirror and the program's memory then agree, so the
// bytes are not pushed back before the next launch.
CUresult into_mirror(CUdeviceptr mirror, CUdeviceptr src, size_t size, CUstream stream,
                     uint8_t mode) {
  const bool per_thread = mode & protocol::kCopyPerThread;
  coherence::DeviceCopyInto into(mirror, size);
  const CUresult rc = per_thread ? forward::cuMemcpyDtoDAsync_v2_ptsz(mirror, src, size, stream)
                                 : forward::cuMemcpyDtoDAsync_v2(mirror, src, size, stream);
  if (rc != CUDA_SUCCESS || (mode & protocol::kCopyAsync)) return rc;
  return per_thread ? forward::cuStreamSynchronize_ptsz(stream)
                    : forward::cuStreamSynchronize(stream);
}

// A synchronous copy waits for its bytes; so does one over the lanes.
CUresult to_host(void* dst, CUdeviceptr src, size_t size, CUstream stream, uint8_t mode) {
  if ((size && !dst) || runs_past_mapped(src, size)) return CUDA_ERROR_INVALID_VALUE;
  // Managed memory is the device's: never written here, under the lock.
  if (is_device_address(dst))
    return unified(reinterpret_cast<CUdeviceptr>(dst), src, size, stream, mode);
  Route route;
  route.address(src);
  route.handle(handle_id(stream));
  if (!route.ok()) return route.refuse("a copy to the host");
  if (CUdeviceptr mirror = 0; registered::in_step_covers(dst, size, &mirror))
    return into_mirror(mirror, src, size, stream, mode);
  CUresult first;
  {
    // The copy writes host memory only: the host's managed pages stay valid.
    coherence::NoManagedWrites confined;
    first = with_connection([&](Connection& conn) {
      coherence::before_request(conn, true);
      work_sent();
      if (!sync_routed_context(&conn)) return CUDA_ERROR_DEVICE_UNAVAILABLE;
      const uint32_t lanes = lanes_for(size, stream, mode, false);
      CUresult rc = lanes ? over_lanes(conn, protocol::kOpMemcpyDtoHLanes, src, dst, size, stream,
                                       mode, lanes, true)
                          : chunks_to_host(conn, dst, src, size, stream, mode);
      // A synchronous copy synchronizes: it also reports what earlier async
      // copies left behind.
      if (!(mode & protocol::kCopyAsync)) {
        if (rc == CUDA_SUCCESS) rc = conn.take_deferred_error();
        coherence::after_sync(conn, false);
      }
      return rc;
    });
  }
  return captured(first, mode) ? through_mirror(src, dst, size, stream, mode, false) : first;
}

// cuMemcpy with unified addressing: the client's allocation record says
// which side each pointer is on.
CUresult unified(CUdeviceptr dst, CUdeviceptr src, size_t size, CUstream stream, uint8_t mode) {
  const bool dst_dev = is_device_address(reinterpret_cast<void*>(dst));
  const bool src_dev = is_device_address(reinterpret_cast<void*>(src));
  const bool async = mode & protocol::kCopyAsync;
  if (dst_dev && src_dev)
    return device_to_device(dst, src, size, stream, async, mode & protocol::kCopyPerThread);
  if (dst_dev) return to_device(dst, reinterpret_cast<const void*>(src), size, stream, mode);
  if (src_dev) return to_host(reinterpret_cast<void*>(dst), src, size, stream, mode);
  if (async)
    if (CUresult rc = cuStreamSynchronize(stream); rc != CUDA_SUCCESS) return rc;
  std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), size);
  return CUDA_SUCCESS;
}

}  // namespace

// The entry points and their per-thread twins are generated (codegen,
// `twins`); these are their bodies.
namespace custom {

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t n, DefaultStream d) {
  return to_device(dst, src, n, nullptr, copy_mode(d, kSync));
}
CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t n, DefaultStream d) {
  return to_host(dst, src, n, nullptr, copy_mode(d, kSync));
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t n, CUstream s,
                              DefaultStream d) {
  return to_device(dst, src, n, s, copy_mode(d, kAsync));
}
CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t n, CUstream s, DefaultStream d) {
  return to_host(dst, src, n, s, copy_mode(d, kAsync));
}
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t n, DefaultStream d) {
  return unified(dst, src, n, nullptr, copy_mode(d, kSync));
}
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s, DefaultStream d) {
  return unified(dst, src, n, s, copy_mode(d, kAsync));
}

}  // namespace custom

}  // namespace scuda::client
