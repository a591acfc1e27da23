// Older ABIs of driver entry points that cuda.h no longer declares and no
// current function shares, served by calling the current one. cuGetProcAddress
// hands them out for old versions, and the generated proc table exports them
// under the driver's old symbol names (cuBLAS finds those with dlsym).
// codegen/annotations.toml [legacy] maps each (name, version) to one.
#pragma once

#include <cuda.h>

#define SCUDA_LEGACY extern "C" __attribute__((visibility("hidden"))) CUresult CUDAAPI

SCUDA_LEGACY scuda_legacy_cuGetProcAddress(const char* symbol, void** pfn, int version,
                                           cuuint64_t flags);
SCUDA_LEGACY scuda_legacy_cuCtxCreate(CUcontext* pctx, unsigned int flags, CUdevice dev);
SCUDA_LEGACY scuda_legacy_cuStreamGetCaptureInfo(CUstream stream, CUstreamCaptureStatus* status,
                                                 cuuint64_t* id);
SCUDA_LEGACY scuda_legacy_cuStreamGetCaptureInfo_ptsz(CUstream stream,
                                                      CUstreamCaptureStatus* status,
                                                      cuuint64_t* id);
SCUDA_LEGACY scuda_legacy_cuStreamGetCaptureInfo_v2(CUstream stream, CUstreamCaptureStatus* status,
                                                    cuuint64_t* id, CUgraph* graph,
                                                    const CUgraphNode** deps, size_t* count);
SCUDA_LEGACY scuda_legacy_cuStreamGetCaptureInfo_v2_ptsz(CUstream stream,
                                                         CUstreamCaptureStatus* status,
                                                         cuuint64_t* id, CUgraph* graph,
                                                         const CUgraphNode** deps, size_t* count);
SCUDA_LEGACY scuda_legacy_cuGraphInstantiate(CUgraphExec* exec, CUgraph graph,
                                             CUgraphNode* error_node, char* log, size_t log_size);
SCUDA_LEGACY scuda_legacy_cuMemPrefetchAsync(CUdeviceptr ptr, size_t count, CUdevice dst,
                                             CUstream stream);
SCUDA_LEGACY scuda_legacy_cuMemPrefetchAsync_ptsz(CUdeviceptr ptr, size_t count, CUdevice dst,
                                                  CUstream stream);
SCUDA_LEGACY scuda_legacy_cuMemAdvise(CUdeviceptr ptr, size_t count, CUmem_advise advice,
                                      CUdevice device);
SCUDA_LEGACY scuda_legacy_cuGraphAddKernelNode(CUgraphNode* node, CUgraph graph,
                                               const CUgraphNode* deps, size_t count,
                                               const CUDA_KERNEL_NODE_PARAMS_v1* params);
SCUDA_LEGACY scuda_legacy_cuGraphKernelNodeGetParams(CUgraphNode node,
                                                     CUDA_KERNEL_NODE_PARAMS_v1* params);
SCUDA_LEGACY scuda_legacy_cuGraphKernelNodeSetParams(CUgraphNode node,
                                                     const CUDA_KERNEL_NODE_PARAMS_v1* params);
SCUDA_LEGACY scuda_legacy_cuGraphExecKernelNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                         const CUDA_KERNEL_NODE_PARAMS_v1* params);
