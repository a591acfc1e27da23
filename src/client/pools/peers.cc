// Peers between devices of two servers (servers.h): neither server can
// reach the other's memory, so such devices are never peers and a copy
// between them is staged through the client. Between devices of one
// server, everything is the server's driver's.
#include "client/pools/peers.h"

#include <cuda.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/contexts/context.h"
#include "client/managed/coherent_pages.h"
#include "client/memory/memory.h"
#include "client/op_calls.h"
#include "client/pools/route.h"
#include "client/pools/servers.h"
#include "client/runtime.h"
#include "client/state.h"
#include "common/lock_order.h"
#include "common/tls_client.h"
#include "custom.h"
#include "forward.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

// A staged copy moves this much at a time, so that its host buffer stays small.
constexpr size_t kStageBytes = size_t{64} << 20;
// A copy from server to server opens a connection of its own through the
// destination's listener, which costs more than a smaller copy's trips
// through the client.
constexpr size_t kDirectBytes = size_t{16} << 20;

// The server of context `ctx`; false when it names none.
bool context_server(CUcontext ctx, uint32_t* server) {
  CUdevice dev = 0;
  DeviceHome home;
  if (cuCtxGetDevice_v2(&dev, ctx) != CUDA_SUCCESS || !device_home(dev, &home)) return false;
  *server = home.server;
  return true;
}

// Runs `copy` with `ctx` current on the calling thread.
template <class Copy>
CUresult in_context(CUcontext ctx, Copy copy) {
  if (CUresult rc = cuCtxPushCurrent_v2(ctx); rc != CUDA_SUCCESS) return rc;
  const CUresult rc = copy();
  CUcontext popped = nullptr;
  cuCtxPopCurrent_v2(&popped);
  return rc;
}

}  // namespace

bool on_two_servers(CUcontext a, CUcontext b) {
  uint32_t sa = 0, sb = 0;
  return several_servers() && context_server(a, &sa) && context_server(b, &sb) && sa != sb;
}

bool on_two_servers(CUdeviceptr a, CUdeviceptr b, CUcontext* ctx_a, CUcontext* ctx_b) {
  CUdevice da = 0, db = 0;
  if (!several_servers() || !placed_device(a, &da) || !placed_device(b, &db) ||
      !on_two_servers(da, db))
    return false;
  *ctx_a = primary_context(da);
  *ctx_b = primary_context(db);
  return *ctx_a && *ctx_b;
}

namespace parts {

// Copies from server to server (docs/pools.md, "Between servers"): wanted
// unless SCUDA_PEER_COPIES=0, the client shows servers a certificate of its
// own (mutual TLS: the sending session has none to show), or the client
// reaches the destination over TLS and the source without (the request
// would carry the destination's token and secret in clear), and given up
// for a pair of servers once one failed to connect; those copies are
// staged. Over TLS the sending session checks that the destination shows
// the certificate the client's own handshake saw there.
struct DirectPeerCopies {
  // One direct copy at a time: two at once in opposite directions would
  // each have a session sending while the other waits to receive.
  RankedMutex copying{LockRank::kRoundTrip, "DirectPeerCopies::copying"};
  RankedMutex mu{LockRank::kLeaf, "DirectPeerCopies::mu"};
  std::map<uint32_t, std::pair<std::string, std::string>> inboxes;  // server -> name, secret
  std::set<std::pair<uint32_t, uint32_t>> failed;                   // (from, to)
};

}  // namespace parts

namespace {

parts::DirectPeerCopies& direct() { return client_state().direct_peer_copies.get(); }

// SCUDA_PEER_COPIES, read once: the environment may not be read while
// another thread changes it, and the program's threads are ours to guess.
std::atomic<bool>& peer_copies_on() {
  static std::atomic<bool>* on = [] {
    const char* flag = std::getenv("SCUDA_PEER_COPIES");
    return new std::atomic<bool>(!flag || std::strcmp(flag, "0") != 0);  // never freed
  }();
  return *on;
}

bool direct_wanted(uint32_t from, uint32_t to) {
  const bool tls_to = tls::target_of(server_connection(to)->address()).tls;
  const bool tls_from = tls::target_of(server_connection(from)->address()).tls;
  if (!peer_copies_on().load(std::memory_order_relaxed) ||
      (tls_to && (tls::client_certificate_given() || !tls_from)))
    return false;
  std::lock_guard lock(direct().mu);
  return !direct().failed.count({from, to});
}

void give_up_direct(uint32_t from, uint32_t to, CUresult sent, CUresult received) {
  spdlog::warn(
      "copies from server {} to server {} go through this machine: the servers could not "
      "copy directly (CUresults {} and {}; the servers' logs say why)",
      server_connection(from)->address(), server_connection(to)->address(), static_cast<int>(sent),
      static_cast<int>(received));
  std::lock_guard lock(direct().mu);
  direct().failed.insert({from, to});
}

// Server `to`'s inbox (peer-inbox), asked once; with its context current.
CUresult inbox(uint32_t to, std::string* name, std::string* secret) {
  {
    std::lock_guard lock(direct().mu);
    if (auto it = direct().inboxes.find(to); it != direct().inboxes.end()) {
      std::tie(*name, *secret) = it->second;
      return CUDA_SUCCESS;
    }
  }
  protocol::op::JoinPoint join;
  if (CUresult rc = ask<protocol::op::PeerInbox>({}, &join); rc != CUDA_SUCCESS) return rc;
  *name = join.name;
  *secret = join.secret;
  std::lock_guard lock(direct().mu);
  direct().inboxes[to] = {*name, *secret};
  return CUDA_SUCCESS;
}

// The copy, from server to server: the source's session sends (its reply
// read later), the destination's receives. *staged is set when the servers
// could not reach each other and the copy is still to be done.
CUresult copy_directly(CUdeviceptr dst, CUcontext dst_ctx, uint32_t to, CUdeviceptr src,
                       CUcontext src_ctx, uint32_t from, size_t size, bool* staged) {
  std::lock_guard one_at_a_time(direct().copying);
  std::string name, secret;
  // The source's inbox too, though nothing arrives there: a server that
  // refuses direct copies (--no-peer-copies) refuses its inbox, and asking
  // first spares the destination's wait for a send that never comes.
  std::string source_name, source_secret;
  const CUresult sender =
      in_context(src_ctx, [&] { return inbox(from, &source_name, &source_secret); });
  const CUresult opened = in_context(dst_ctx, [&] { return inbox(to, &name, &secret); });
  if (sender != CUDA_SUCCESS || opened != CUDA_SUCCESS) {
    give_up_direct(from, to, sender, opened);
    *staged = true;
    return CUDA_SUCCESS;
  }
  const uint64_t id = new_shared_handle_id();
  const protocol::Writer send = protocol::encode(
      protocol::op::PeerSend::Request{src,
                                      size,
                                      id,
                                      tls::target_of(server_connection(to)->address()).address,
                                      server_connection(to)->token(),
                                      {name, secret},
                                      server_connection(to)->peer_certificate()});
  auto sent = std::make_shared<CUresult>(CUDA_ERROR_UNKNOWN);
  uint64_t request = 0;
  if (CUresult rc = in_context(src_ctx,
                               [&] {
                                 return call_later(protocol::op::PeerSend::kOp, send, &request,
                                                   [sent](CUresult rc, protocol::Reader&) {
                                                     *sent = rc;
                                                     return CUDA_SUCCESS;
                                                   });
                               });
      rc != CUDA_SUCCESS)
    return rc;  // the source's connection is lost: staging would fail too
  const CUresult received = in_context(dst_ctx, [&] {
    return ask<protocol::op::PeerReceive>({dst, size, id});
  });
  {
    Route route;  // replies read on the source's connection are its server's
    route.to(from);
    Connection* source = server_connection(from);
    std::lock_guard lock(source->mutex());
    if (CUresult rc = source->settle(request); rc != CUDA_SUCCESS) return rc;
  }
  if (*sent == CUDA_ERROR_NOT_SUPPORTED || received == CUDA_ERROR_NOT_SUPPORTED) {
    give_up_direct(from, to, *sent, received);
    *staged = true;
    return CUDA_SUCCESS;
  }
  return *sent != CUDA_SUCCESS ? *sent : received;
}

// Through the client's memory, 64 MiB at a time.
CUresult copy_staged(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                     size_t size) {
  std::vector<uint8_t> stage(std::min(size, kStageBytes));
  for (size_t done = 0; done < size;) {
    const size_t n = std::min(stage.size(), size - done);
    CUresult rc = in_context(src_ctx, [&] { return cuMemcpyDtoH_v2(stage.data(), src + done, n); });
    if (rc == CUDA_SUCCESS)
      rc = in_context(dst_ctx, [&] { return cuMemcpyHtoD_v2(dst + done, stage.data(), n); });
    if (rc != CUDA_SUCCESS) return rc;
    done += n;
  }
  return CUDA_SUCCESS;
}

}  // namespace

CUresult copy_across_servers(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                             size_t size, CUstream stream) {
  // The copy runs in the program's order: after the stream's work.
  if (stream)
    if (CUresult rc = cuStreamSynchronize(stream); rc != CUDA_SUCCESS) return rc;
  uint32_t from = 0, to = 0;
  if (size >= kDirectBytes && context_server(src_ctx, &from) && context_server(dst_ctx, &to) &&
      direct_wanted(from, to)) {
    bool staged = false;
    const CUresult rc = copy_directly(dst, dst_ctx, to, src, src_ctx, from, size, &staged);
    if (!staged) return rc;
  }
  return copy_staged(dst, dst_ctx, src, src_ctx, size);
}

// A peer copy: staged when its contexts are on two servers, else
// `same_server`, the driver's own, on their server. `stream` is what a
// staged copy waits for first.
template <class SameServer>
CUresult copy_peer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                   size_t size, CUstream stream, SameServer same_server) {
  if (on_two_servers(dst_ctx, src_ctx))
    return copy_across_servers(dst, dst_ctx, src, src_ctx, size, stream);
  return same_server();
}

CUresult device_to_device(CUdeviceptr dst, CUdeviceptr src, size_t size, CUstream stream,
                          bool async, bool per_thread) {
  if (CUcontext dst_ctx, src_ctx; on_two_servers(dst, src, &dst_ctx, &src_ctx)) {
    // What the staged copy comes after: the stream, or the default stream
    // that the entry point names; a plain synchronous copy waits anyway.
    CUstream after = per_thread ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
    if (async && stream) after = stream;
    if (!async && !per_thread) after = nullptr;
    return copy_across_servers(dst, dst_ctx, src, src_ctx, size, after);
  }
  Route route;
  route.address(dst);
  coherence::DeviceCopyInto into(dst, size);
  if (per_thread)
    return async ? forward::cuMemcpyDtoDAsync_v2_ptsz(dst, src, size, stream)
                 : forward::cuMemcpyDtoD_v2_ptds(dst, src, size);
  return async ? forward::cuMemcpyDtoDAsync_v2(dst, src, size, stream)
               : forward::cuMemcpyDtoD_v2(dst, src, size);
}

}  // namespace scuda::client

namespace client = scuda::client;
namespace forward = scuda::client::forward;

CUresult scuda::client::custom::cuDeviceCanAccessPeer(int* can, CUdevice dev, CUdevice peer) {
  if (client::on_two_servers(dev, peer)) {
    if (!can) return CUDA_ERROR_INVALID_VALUE;
    *can = 0;
    return CUDA_SUCCESS;
  }
  return forward::cuDeviceCanAccessPeer(can, dev, peer);
}

CUresult scuda::client::custom::cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute attrib,
                                                        CUdevice src, CUdevice dst) {
  if (client::on_two_servers(src, dst)) {
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    *value = 0;  // no access, no atomics, no rank, no array access
    return CUDA_SUCCESS;
  }
  return forward::cuDeviceGetP2PAttribute(value, attrib, src, dst);
}

CUresult scuda::client::custom::cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
  CUcontext current = nullptr;
  if (::cuCtxGetCurrent(&current) == CUDA_SUCCESS && current &&
      client::on_two_servers(current, peer))
    return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  return forward::cuCtxEnablePeerAccess(peer, flags);
}

// The entry points and their per-thread twins are generated (codegen,
// `twins`); these are their bodies.
namespace scuda::client::custom {

CUresult cuMemcpyPeer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                      size_t size, DefaultStream d) {
  return copy_peer(dst, dst_ctx, src, src_ctx, size, per_thread(d) ? CU_STREAM_PER_THREAD : nullptr,
                   [&] { return forward::cuMemcpyPeer(dst, dst_ctx, src, src_ctx, size, d); });
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src, CUcontext src_ctx,
                           size_t size, CUstream stream, DefaultStream d) {
  CUstream after = stream ? stream : per_thread(d) ? CU_STREAM_PER_THREAD : CU_STREAM_LEGACY;
  return copy_peer(dst, dst_ctx, src, src_ctx, size, after, [&] {
    return forward::cuMemcpyPeerAsync(dst, dst_ctx, src, src_ctx, size, stream, d);
  });
}

// cudart's cudaMemcpy between devices, PyTorch's copies among them.
CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t size, DefaultStream d) {
  return device_to_device(dst, src, size, nullptr, false, per_thread(d));
}

CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t size, CUstream stream,
                              DefaultStream d) {
  return device_to_device(dst, src, size, stream, true, per_thread(d));
}

}  // namespace scuda::client::custom

// For tests: turns copies from server to server on (1) or off (0) from now
// on, as SCUDA_PEER_COPIES does at the start.
extern "C" __attribute__((visibility("default"))) int scuda_set_peer_copies(int on) {
  scuda::client::peer_copies_on().store(on != 0, std::memory_order_relaxed);
  return 0;
}
