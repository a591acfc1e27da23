#include "client/legacy_entry_points.h"

#include <cstring>

// cuda.h declares the per-thread variants only under
// CUDA_API_PER_THREAD_DEFAULT_STREAM; the client defines them all.
extern "C" {
CUresult CUDAAPI cuStreamGetCaptureInfo_v3_ptsz(CUstream, CUstreamCaptureStatus*, cuuint64_t*,
                                                CUgraph*, const CUgraphNode**,
                                                const CUgraphEdgeData**, size_t*);
CUresult CUDAAPI cuMemPrefetchAsync_v2_ptsz(CUdeviceptr, size_t, CUmemLocation, unsigned int,
                                            CUstream);
}

namespace {

// CUDA_KERNEL_NODE_PARAMS_v1 is the start of the current struct, which adds
// the kernel and context handles (NULL: take them from `func`).
CUDA_KERNEL_NODE_PARAMS widen(const CUDA_KERNEL_NODE_PARAMS_v1& v1) {
  CUDA_KERNEL_NODE_PARAMS p{};
  std::memcpy(&p, &v1, sizeof v1);
  return p;
}

// CU_DEVICE_CPU (-1) named the host before locations existed.
CUmemLocation location_of(CUdevice device) {
  CUmemLocation where{};
  where.type = device == CU_DEVICE_CPU ? CU_MEM_LOCATION_TYPE_HOST : CU_MEM_LOCATION_TYPE_DEVICE;
  where.id = device == CU_DEVICE_CPU ? 0 : device;
  return where;
}

}  // namespace

CUresult scuda_legacy_cuGetProcAddress(const char* symbol, void** pfn, int version,
                                       cuuint64_t flags) {
  return cuGetProcAddress_v2(symbol, pfn, version, flags, nullptr);
}

CUresult scuda_legacy_cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev) {
  return cuCtxCreate_v4(pctx, nullptr, flags, dev);
}

CUresult scuda_legacy_cuStreamGetCaptureInfo(CUstream stream, CUstreamCaptureStatus* status,
                                             cuuint64_t* id) {
  return cuStreamGetCaptureInfo_v3(stream, status, id, nullptr, nullptr, nullptr, nullptr);
}

CUresult scuda_legacy_cuStreamGetCaptureInfo_ptsz(CUstream stream, CUstreamCaptureStatus* status,
                                                  cuuint64_t* id) {
  return cuStreamGetCaptureInfo_v3_ptsz(stream, status, id, nullptr, nullptr, nullptr, nullptr);
}

CUresult scuda_legacy_cuStreamGetCaptureInfo_v2(CUstream stream, CUstreamCaptureStatus* status,
                                                cuuint64_t* id, CUgraph* graph,
                                                const CUgraphNode** deps, size_t* count) {
  return cuStreamGetCaptureInfo_v3(stream, status, id, graph, deps, nullptr, count);
}

CUresult scuda_legacy_cuStreamGetCaptureInfo_v2_ptsz(CUstream stream, CUstreamCaptureStatus* status,
                                                     cuuint64_t* id, CUgraph* graph,
                                                     const CUgraphNode** deps, size_t* count) {
  return cuStreamGetCaptureInfo_v3_ptsz(stream, status, id, graph, deps, nullptr, count);
}

// The error node and log are left empty: instantiation reports only a code.
CUresult scuda_legacy_cuGraphInstantiate(CUgraphExec* exec, CUgraph graph, CUgraphNode* error_node,
                                         char* log, size_t log_size) {
  if (error_node) *error_node = nullptr;
  if (log && log_size) log[0] = '\0';
  return cuGraphInstantiateWithFlags(exec, graph, 0);
}

CUresult scuda_legacy_cuMemPrefetchAsync(CUdeviceptr ptr, size_t count, CUdevice dst,
                                         CUstream stream) {
  return cuMemPrefetchAsync_v2(ptr, count, location_of(dst), 0, stream);
}

CUresult scuda_legacy_cuMemPrefetchAsync_ptsz(CUdeviceptr ptr, size_t count, CUdevice dst,
                                              CUstream stream) {
  return cuMemPrefetchAsync_v2_ptsz(ptr, count, location_of(dst), 0, stream);
}

CUresult scuda_legacy_cuMemAdvise(CUdeviceptr ptr, size_t count, CUmem_advise advice,
                                  CUdevice device) {
  return cuMemAdvise_v2(ptr, count, advice, location_of(device));
}

CUresult scuda_legacy_cuGraphAddKernelNode(CUgraphNode* node, CUgraph graph,
                                           const CUgraphNode* deps, size_t count,
                                           const CUDA_KERNEL_NODE_PARAMS_v1* params) {
  if (!params) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_KERNEL_NODE_PARAMS p = widen(*params);
  return cuGraphAddKernelNode_v2(node, graph, deps, count, &p);
}

CUresult scuda_legacy_cuGraphKernelNodeGetParams(CUgraphNode node,
                                                 CUDA_KERNEL_NODE_PARAMS_v1* params) {
  if (!params) return CUDA_ERROR_INVALID_VALUE;
  CUDA_KERNEL_NODE_PARAMS p{};
  const CUresult rc = cuGraphKernelNodeGetParams_v2(node, &p);
  if (rc == CUDA_SUCCESS) std::memcpy(params, &p, sizeof *params);
  return rc;
}

CUresult scuda_legacy_cuGraphKernelNodeSetParams(CUgraphNode node,
                                                 const CUDA_KERNEL_NODE_PARAMS_v1* params) {
  if (!params) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_KERNEL_NODE_PARAMS p = widen(*params);
  return cuGraphKernelNodeSetParams_v2(node, &p);
}

CUresult scuda_legacy_cuGraphExecKernelNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                     const CUDA_KERNEL_NODE_PARAMS_v1* params) {
  if (!params) return CUDA_ERROR_INVALID_VALUE;
  const CUDA_KERNEL_NODE_PARAMS p = widen(*params);
  return cuGraphExecKernelNodeSetParams_v2(exec, node, &p);
}
