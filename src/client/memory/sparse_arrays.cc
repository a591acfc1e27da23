// cuMemMapArrayAsync: sparse and deferred-mapping arrays' tiles and mip
// tails, mapped to or unmapped from physical memory. Each entry travels as
// it is: its array or mipmapped array is already the client's id, which the
// session resolves by the entry's resource type, and its memory handle is
// the server's own value (cuMemCreate's).
#include <cuda.h>

#include <vector>

#include "client/op_calls.h"
#include "custom.h"
#include "protocol/op_layouts.h"

namespace {

CUresult map_arrays(CUarrayMapInfo* list, unsigned count, CUstream stream, bool per_thread) {
  if ((count && !list) || count > scuda::protocol::kMaxArrayMaps) return CUDA_ERROR_INVALID_VALUE;
  using Op = scuda::protocol::op::MemMapArray;
  return scuda::client::ask<Op>({static_cast<uint8_t>(per_thread), scuda::client::handle_id(stream),
                                 std::vector<CUarrayMapInfo>(list, list + count)});
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
