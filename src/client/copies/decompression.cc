// cuMemBatchDecompressAsync: the hardware decompression engine's batches.
// The parameter structs hold device addresses only, so they cross as
// bytes; the reply carries the driver's result and error index even when
// the batch fails, since the index says which entry failed.
#include <cuda.h>

#include <vector>

#include "client/managed/coherent_pages.h"
#include "client/runtime.h"
#include "custom.h"
#include "protocol/ops.h"

namespace {

// u8 per-thread, u64 stream id, u32 flags, u8 error index wanted, u64
// count, count x CUmemDecompressParams -> u32 result, u64 error index.
CUresult decompress(CUmemDecompressParams* params, size_t count, unsigned flags,
                    size_t* error_index, CUstream stream, bool per_thread) {
  if ((count && !params) || count > scuda::protocol::kMaxDecompressions)
    return CUDA_ERROR_INVALID_VALUE;
  scuda::protocol::Writer w;
  w.u8(per_thread);
  w.u64(scuda::client::handle_id(stream));
  w.u32(flags);
  w.u8(error_index != nullptr);
  w.u64(count);
  w.bytes(params, count * sizeof(CUmemDecompressParams));
  std::vector<uint8_t> reply;
  if (CUresult rc = scuda::client::call(scuda::protocol::kOpMemBatchDecompress, w, &reply);
      rc != CUDA_SUCCESS)
    return rc;
  scuda::protocol::Reader r(reply);
  const auto result = static_cast<CUresult>(r.u32());
  const uint64_t index = r.u64();
  if (!r.done()) return scuda::client::bad_reply("cuMemBatchDecompressAsync");
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
