// Peers between devices of two servers (servers.h): neither server can
// reach the other's memory, so such devices are never peers and a copy
// between them is staged through the client. Between devices of one
// server, everything is the server's driver's.
#include "client/peers.h"

#include <cuda.h>

#include <algorithm>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/context.h"
#include "client/memory.h"
#include "client/route.h"
#include "client/runtime.h"
#include "client/servers.h"
#include "forward.h"

namespace scuda::client {

namespace {

// A staged copy moves this much at a time, so that its host buffer stays small.
constexpr size_t kStageBytes = size_t{64} << 20;

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
  DeviceHome ha, hb;
  if (!several_servers() || !placed_device(a, &da) || !placed_device(b, &db) ||
      !device_home(da, &ha) || !device_home(db, &hb) || ha.server == hb.server)
    return false;
  *ctx_a = primary_context(da);
  *ctx_b = primary_context(db);
  return *ctx_a && *ctx_b;
}

CUresult copy_across_servers(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                             CUcontext src_ctx, size_t size, CUstream stream) {
  // The copy runs in the program's order: after the stream's work.
  if (stream)
    if (CUresult rc = cuStreamSynchronize(stream); rc != CUDA_SUCCESS) return rc;
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

// A device-to-device copy: staged when its memory is on two servers, else
// `same_server`, on the server its stream or memory names.
template <class SameServer>
CUresult copy_device(CUdeviceptr dst, CUdeviceptr src, size_t size, CUstream stream,
                     SameServer same_server) {
  if (CUcontext dst_ctx, src_ctx; on_two_servers(dst, src, &dst_ctx, &src_ctx))
    return copy_across_servers(dst, dst_ctx, src, src_ctx, size, stream);
  Route route;
  route.address(dst);
  return same_server();
}

}  // namespace scuda::client

namespace client = scuda::client;
namespace forward = scuda::client::forward;

extern "C" {

CUresult CUDAAPI cuDeviceCanAccessPeer(int* can, CUdevice dev, CUdevice peer) {
  SCUDA_PASSTHROUGH(cuDeviceCanAccessPeer, can, dev, peer);
  client::DeviceHome a, b;
  if (client::several_servers() && client::device_home(dev, &a) &&
      client::device_home(peer, &b) && a.server != b.server) {
    if (!can) return CUDA_ERROR_INVALID_VALUE;
    *can = 0;
    return CUDA_SUCCESS;
  }
  return forward::cuDeviceCanAccessPeer(can, dev, peer);
}

CUresult CUDAAPI cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute attrib, CUdevice src,
                                         CUdevice dst) {
  SCUDA_PASSTHROUGH(cuDeviceGetP2PAttribute, value, attrib, src, dst);
  client::DeviceHome a, b;
  if (client::several_servers() && client::device_home(src, &a) &&
      client::device_home(dst, &b) && a.server != b.server) {
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    *value = 0;  // no access, no atomics, no rank, no array access
    return CUDA_SUCCESS;
  }
  return forward::cuDeviceGetP2PAttribute(value, attrib, src, dst);
}

CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
  SCUDA_PASSTHROUGH(cuCtxEnablePeerAccess, peer, flags);
  CUcontext current = nullptr;
  if (cuCtxGetCurrent(&current) == CUDA_SUCCESS && current &&
      client::on_two_servers(current, peer))
    return CUDA_ERROR_PEER_ACCESS_UNSUPPORTED;
  return forward::cuCtxEnablePeerAccess(peer, flags);
}

CUresult CUDAAPI cuMemcpyPeer(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                              CUcontext src_ctx, size_t size) {
  SCUDA_PASSTHROUGH(cuMemcpyPeer, dst, dst_ctx, src, src_ctx, size);
  return client::copy_peer(dst, dst_ctx, src, src_ctx, size, nullptr, [&] {
    return forward::cuMemcpyPeer(dst, dst_ctx, src, src_ctx, size);
  });
}

CUresult CUDAAPI cuMemcpyPeer_ptds(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                   CUcontext src_ctx, size_t size) {
  SCUDA_PASSTHROUGH(cuMemcpyPeer_ptds, dst, dst_ctx, src, src_ctx, size);
  return client::copy_peer(dst, dst_ctx, src, src_ctx, size, CU_STREAM_PER_THREAD, [&] {
    return forward::cuMemcpyPeer_ptds(dst, dst_ctx, src, src_ctx, size);
  });
}

CUresult CUDAAPI cuMemcpyPeerAsync(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                   CUcontext src_ctx, size_t size, CUstream stream) {
  SCUDA_PASSTHROUGH(cuMemcpyPeerAsync, dst, dst_ctx, src, src_ctx, size, stream);
  return client::copy_peer(dst, dst_ctx, src, src_ctx, size, stream ? stream : CU_STREAM_LEGACY,
                           [&] {
                             return forward::cuMemcpyPeerAsync(dst, dst_ctx, src, src_ctx, size,
                                                               stream);
                           });
}

CUresult CUDAAPI cuMemcpyPeerAsync_ptsz(CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                                        CUcontext src_ctx, size_t size, CUstream stream) {
  SCUDA_PASSTHROUGH(cuMemcpyPeerAsync_ptsz, dst, dst_ctx, src, src_ctx, size, stream);
  return client::copy_peer(dst, dst_ctx, src, src_ctx, size,
                           stream ? stream : CU_STREAM_PER_THREAD, [&] {
                             return forward::cuMemcpyPeerAsync_ptsz(dst, dst_ctx, src, src_ctx,
                                                                    size, stream);
                           });
}

// cudart's cudaMemcpy between devices, PyTorch's copies among them.
CUresult CUDAAPI cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t size) {
  SCUDA_PASSTHROUGH(cuMemcpyDtoD_v2, dst, src, size);
  return client::copy_device(dst, src, size, nullptr,
                             [&] { return forward::cuMemcpyDtoD_v2(dst, src, size); });
}

CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t size) {
  SCUDA_PASSTHROUGH(cuMemcpyDtoD_v2_ptds, dst, src, size);
  return client::copy_device(dst, src, size, nullptr,
                             [&] { return forward::cuMemcpyDtoD_v2_ptds(dst, src, size); });
}

CUresult CUDAAPI cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t size,
                                      CUstream stream) {
  SCUDA_PASSTHROUGH(cuMemcpyDtoDAsync_v2, dst, src, size, stream);
  return client::copy_device(dst, src, size, stream ? stream : CU_STREAM_LEGACY, [&] {
    return forward::cuMemcpyDtoDAsync_v2(dst, src, size, stream);
  });
}

CUresult CUDAAPI cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t size,
                                           CUstream stream) {
  SCUDA_PASSTHROUGH(cuMemcpyDtoDAsync_v2_ptsz, dst, src, size, stream);
  return client::copy_device(dst, src, size, stream ? stream : CU_STREAM_PER_THREAD, [&] {
    return forward::cuMemcpyDtoDAsync_v2_ptsz(dst, src, size, stream);
  });
}

}  // extern "C"
