// A unit of stream work (a kernel, memset, copy, event record...): run at
// once, or recorded as a graph node while its stream is capturing. Graph
// launches run their nodes' work in a topological order. Callers hold the
// state lock.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <vector>

#include "launch_log.h"

namespace scuda_double {

struct Work {
  CUgraphNodeType type = CU_GRAPH_NODE_TYPE_EMPTY;
  CUfunction func = nullptr;  // kernel: function (or kernel), shape, packed params
  LaunchRecord launch{};
  CUDA_MEMSET_NODE_PARAMS memset{};
  CUdeviceptr dst = 0, src = 0;  // memcpy, device to device
  size_t bytes = 0;
  uintptr_t child = 0;  // child graph
  CUevent event = nullptr;
  CUhostFn host_fn = nullptr;  // host node: called with host_data
  void* host_data = nullptr;
  // Memory allocation node: its parameters (accessDescs pointing nowhere)
  // and access descriptors, allocated when the node is added.
  CUDA_MEM_ALLOC_NODE_PARAMS alloc{};
  std::vector<CUmemAccessDesc> access;
  // Batch memory operation node: its parameters (paramArray pointing
  // nowhere) and operations.
  CUDA_BATCH_MEM_OP_NODE_PARAMS_v2 batch{};
  std::vector<CUstreamBatchMemOpParams> mem_ops;
};

CUresult run_work(const Work& work);
// Runs the work, or records it when `stream` is capturing (capture.cc).
CUresult submit(CUstream stream, const Work& work);
// Whether `stream` is capturing (capture.cc).
bool capturing(CUstream stream);

// The pieces run_work uses, from launch.cc, memset.cc and copy.cc.
CUresult run_kernel(const Work& work);
CUresult fill(CUdeviceptr dst, size_t pitch, unsigned value, unsigned element, size_t width,
              size_t height);
CUresult copy_device(CUdeviceptr dst, CUdeviceptr src, size_t bytes);

// Batch memory operations (batch_mem_ops.cc): checks a batch's operations
// (addresses in device memory, known kinds); runs them in order.
CUresult check_mem_ops(const CUstreamBatchMemOpParams* ops, unsigned count);
CUresult run_mem_ops(const std::vector<CUstreamBatchMemOpParams>& ops);
// A batch memory operation node's work, its operations copied.
CUresult mem_ops_work(const CUDA_BATCH_MEM_OP_NODE_PARAMS_v2& p, Work* work);

// Capture of event records and waits (capture.cc): true when `stream` or
// `event` belongs to a capture, which then handled the call.
bool capture_record(CUevent event, CUstream stream);
bool capture_wait(CUstream stream, CUevent event);

}  // namespace scuda_double
