// cuMemBatchDecompressAsync: the hardware decompression engine's batches.
// The parameter structs hold device addresses only, so they cross as
// bytes; the reply carries the driver's result and error index even when
// the batch fails, since the index says which entry failed.
#include <cuda.h>

#include <vector>

#include "client/managed/coherent_pages.h"
#include "client/op_calls.h"
#include "custom.h"
#include "protocol/op_layouts.h"

namespace {

CUresult decompress(CUmemDecompressParams* params, size_t count, unsigned flags,
                    size_t* error_index, CUstream stream, bool per_thread) {
  if ((count && !params) || count > scuda::protocol::kMaxDecompressions)
    return CUDA_ERROR_INVALID_VALUE;
  using Op = scuda::protocol::op::MemBatchDecompress;
  const Op::Request request{static_cast<uint8_t>(per_thread), scuda::client::handle_id(stream),
                            flags, static_cast<uint8_t>(error_index != nullptr),
                            std::vector<CUmemDecompressParams>(params, params + count)};
  Op::Reply reply;
  if (CUresult rc = scuda::client::ask<Op>(request, &reply); rc != CUDA_SUCCESS) return rc;
  const auto result = static_cast<CUresult>(reply.result);
  const uint64_t index = reply.index;
  if (error_index) *error_index = index;
  // The device writes each destination and its actual byte count.
  for (size_t i = 0; result == CUDA_SUCCESS && i < count; ++i) {
    scuda::client::coherence::device_wrote(reinterpret_cast<uintptr_t>(params[i].dst),
                                           params[i].dstNumBytes);
    scuda::client::coherence::device_wrote(reinterpret_cast<uintptr_t>(params[i].dstActBytes),
                                           sizeof(cuuint32_t));
  }
  return result;
}

}  // namespace

// The entry points and their per-thread twins are generated (codegen,
// `twins`); these are their bodies.
namespace scuda::client::custom {

CUresult cuMemBatchDecompressAsync(CUmemDecompressParams* params, size_t count, unsigned int flags,
                                   size_t* errorIndex, CUstream stream, DefaultStream d) {
  return decompress(params, count, flags, errorIndex, stream, per_thread(d));
}

}  // namespace scuda::client::custom
