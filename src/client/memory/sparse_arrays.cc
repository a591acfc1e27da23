// cuMemMapArrayAsync: sparse and deferred-mapping arrays' tiles and mip
// tails, mapped to or unmapped from physical memory. Each entry travels as
// it is: its array or mipmapped array is already the client's id, which the
// session resolves by the entry's resource type, and its memory handle is
// the server's own value (cuMemCreate's).
#include <cuda.h>

#include <vector>

#include "client/runtime.h"
#include "client_gen.h"
#include "custom.h"
#include "protocol/ops.h"

namespace {

// u8 per-thread, u64 stream id, u32 count, count x CUarrayMapInfo.
CUresult map_arrays(CUarrayMapInfo* list, unsigned count, CUstream stream, bool per_thread) {
  if ((count && !list) || count > scuda::protocol::kMaxArrayMaps) return CUDA_ERROR_INVALID_VALUE;
  scuda::protocol::Writer w;
  w.u8(per_thread);
  w.u64(scuda::client::handle_id(stream));
  w.u32(count);
  w.bytes(list, count * sizeof(CUarrayMapInfo));
  std::vector<uint8_t> reply;
  if (CUresult rc = scuda::client::call(scuda::protocol::kOpMemMapArray, w, &reply);
      rc != CUDA_SUCCESS)
    return rc;
  return scuda::client::gen::finish(scuda::protocol::Reader(reply), "cuMemMapArrayAsync");
}

}  // namespace

// The entry points and their per-thread twins are generated (codegen,
// `twins`); these are their bodies.
namespace scuda::client::custom {

CUresult cuMemMapArrayAsync(CUarrayMapInfo* list, unsigned int count, CUstream stream,
                            DefaultStream d) {
  return map_arrays(list, count, stream, per_thread(d));
}

}  // namespace scuda::client::custom
