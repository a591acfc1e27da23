// Batch memory operations (cuStreamBatchMemOp_v2 and batch memory operation
// graph nodes): writes store their value; a wait must already be met, as
// nothing else runs while the double's stream does; barriers and flushes
// have nothing to order.
#include <cuda.h>

#include <cstring>
#include <vector>

#include "allocations.h"
#include "graph.h"
#include "state.h"
#include "work.h"

using namespace scuda_double;

namespace {

constexpr unsigned kMaxBatch = 256;

bool is_64(CUstreamBatchMemOpType op) {
  return op == CU_STREAM_MEM_OP_WAIT_VALUE_64 || op == CU_STREAM_MEM_OP_WRITE_VALUE_64;
}

bool names_memory(CUstreamBatchMemOpType op) {
  return op == CU_STREAM_MEM_OP_WAIT_VALUE_32 || op == CU_STREAM_MEM_OP_WRITE_VALUE_32 || is_64(op);
}

bool wait_met(const CUstreamBatchMemOpParams& p) {
  const CUdeviceptr at = p.waitValue.address;
  const uint64_t have = is_64(p.operation) ? *reinterpret_cast<const uint64_t*>(at)
                                           : *reinterpret_cast<const uint32_t*>(at);
  const uint64_t want = is_64(p.operation) ? p.waitValue.value64 : p.waitValue.value;
  switch (p.waitValue.flags & ~CU_STREAM_WAIT_VALUE_FLUSH) {
    case CU_STREAM_WAIT_VALUE_GEQ: return static_cast<int64_t>(have - want) >= 0;
    case CU_STREAM_WAIT_VALUE_EQ: return have == want;
    case CU_STREAM_WAIT_VALUE_AND: return (have & want) != 0;
    default: return ~(have | want) != 0;
  }
}

void write_value(const CUstreamBatchMemOpParams& p) {
  if (is_64(p.operation)) *reinterpret_cast<uint64_t*>(p.writeValue.address) = p.writeValue.value64;
  else *reinterpret_cast<uint32_t*>(p.writeValue.address) = p.writeValue.value;
}

}  // namespace

CUresult scuda_double::check_mem_ops(const CUstreamBatchMemOpParams* ops, unsigned count) {
  if (count == 0 || count > kMaxBatch || ops == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < count; ++i) {
    const CUstreamBatchMemOpType op = ops[i].operation;
    const size_t size = is_64(op) ? 8 : 4;
    if (names_memory(op)
            ? !device_range(ops[i].writeValue.address, size)
            : op != CU_STREAM_MEM_OP_BARRIER && op != CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES)
      return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult scuda_double::run_mem_ops(const std::vector<CUstreamBatchMemOpParams>& ops) {
  for (const CUstreamBatchMemOpParams& p : ops) {
    if (p.operation == CU_STREAM_MEM_OP_WRITE_VALUE_32 ||
        p.operation == CU_STREAM_MEM_OP_WRITE_VALUE_64)
      write_value(p);
    else if (names_memory(p.operation) && !wait_met(p))
      return CUDA_ERROR_NOT_READY;  // it would never be met
  }
  return CUDA_SUCCESS;
}

CUresult scuda_double::mem_ops_work(const CUDA_BATCH_MEM_OP_NODE_PARAMS_v2& p, Work* work) {
  if (CUresult rc = check_mem_ops(p.paramArray, p.count); rc != CUDA_SUCCESS) return rc;
  work->batch = p;
  work->batch.paramArray = nullptr;
  work->mem_ops.assign(p.paramArray, p.paramArray + p.count);
  return CUDA_SUCCESS;
}

extern "C" {

CUresult cuStreamBatchMemOp_v2(CUstream stream, unsigned int count,
                               CUstreamBatchMemOpParams* paramArray, unsigned int flags) {
  Call call = begin_on_stream(stream);
  if (call.status != CUDA_SUCCESS) return call.status;
  if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
  if (CUresult rc = check_mem_ops(paramArray, count); rc != CUDA_SUCCESS) return rc;
  return run_mem_ops(std::vector<CUstreamBatchMemOpParams>(paramArray, paramArray + count));
}

// The node's operations, pointing at the node's own copy, as the driver's.
CUresult cuGraphBatchMemOpNodeGetParams(CUgraphNode hNode,
                                        CUDA_BATCH_MEM_OP_NODE_PARAMS* nodeParams_out) {
  Call call = begin_in_context();
  if (call.status != CUDA_SUCCESS) return call.status;
  Node* n = graphs().nodes.find(hNode);
  if (n == nullptr || nodeParams_out == nullptr || n->work.type != CU_GRAPH_NODE_TYPE_BATCH_MEM_OP)
    return CUDA_ERROR_INVALID_VALUE;
  const CUDA_BATCH_MEM_OP_NODE_PARAMS_v2& b = n->work.batch;
  *nodeParams_out = {b.ctx, b.count, n->work.mem_ops.data(), b.flags};
  return CUDA_SUCCESS;
}

}  // extern "C"
