// Peer access and peer copies between the double's devices. Every pair of
// distinct devices can reach each other, as GPUs on one NVLink switch can;
// memory is host memory, so a peer copy is a copy, and kernels are not kept
// from memory whose access was not enabled.
#include <cuda.h>

#include "state.h"
#include "work.h"

using namespace scuda_double;

namespace {

bool distinct_devices(CUdevice dev, CUdevice peer) {
  return valid_device(dev) && valid_device(peer) && dev != peer;
}

// Both contexts usable: else INVALID_CONTEXT, as the driver answers.
CUresult check_contexts(CUcontext dst, CUcontext src) {
  const bool ok = usable_context(reinterpret_cast<uintptr_t>(dst)) != nullptr &&
                  usable_context(reinterpret_cast<uintptr_t>(src)) != nullptr;
  return ok ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

CUresult copy_peer(Call& call, CUdeviceptr dst, CUcontext dst_ctx, CUdeviceptr src,
                   CUcontext src_ctx, size_t bytes) {
  if (call.status != CUDA_SUCCESS) return call.status;
  if (CUresult rc = check_contexts(dst_ctx, src_ctx); rc != CUDA_SUCCESS) return rc;
  return copy_device(dst, src, bytes);
}

}  // namespace

extern "C" {

CUresult cuDeviceCanAccessPeer(int* canAccessPeer, CUdevice dev, CUdevice peerDev) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (canAccessPeer == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!valid_device(dev) || !valid_device(peerDev)) return CUDA_ERROR_INVALID_DEVICE;
  *canAccessPeer = dev != peerDev ? 1 : 0;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetP2PAttribute(int* value, CUdevice_P2PAttribute attrib, CUdevice src,
                                 CUdevice dst) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!distinct_devices(src, dst)) return CUDA_ERROR_INVALID_DEVICE;
  switch (attrib) {
    case CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK: *value = 0; return CUDA_SUCCESS;
    case CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED:
    case CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED:
    case CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED: *value = 1; return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
}

CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
  const uintptr_t peer = reinterpret_cast<uintptr_t>(peerContext);
  const Context* other = usable_context(peer);
  if (other == nullptr) return CUDA_ERROR_INVALID_CONTEXT;
  if (other->device == call.ctx->device) return CUDA_ERROR_INVALID_DEVICE;
  if (!call.ctx->peers.insert(peer).second) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
  return CUDA_SUCCESS;
}

CUresult cuCtxDisablePeerAccess(CUcontext peerContext) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (call.ctx->peers.erase(reinterpret_cast<uintptr_t>(peerContext)) == 0)
    return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  return CUDA_SUCCESS;
}

CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                      CUcontext srcContext, size_t ByteCount) {
  Call call = begin();
  return copy_peer(call, dstDevice, dstContext, srcDevice, srcContext, ByteCount);
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                           CUcontext srcContext, size_t ByteCount, CUstream hStream) {
  Call call = begin_on_stream(hStream);
  return copy_peer(call, dstDevice, dstContext, srcDevice, srcContext, ByteCount);
}

CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                                CUcontext srcContext, size_t ByteCount, CUstream hStream) {
  Call call = begin_on_stream(hStream);
  return copy_peer(call, dstDevice, dstContext, srcDevice, srcContext, ByteCount);
}

}  // extern "C"
