// Stream requests whose argument is an array of structs: sparse array
// mappings (cuMemMapArrayAsync), whose entries name arrays by the client's
// ids, and decompression batches (cuMemBatchDecompressAsync), whose entries
// hold device addresses only.
#include <cuda.h>

#include <cstdint>
#include <vector>

#include "protocol/op_layouts.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"
#include "server/session/typed_handler.h"
#include "server_gen.h"

namespace scuda::server {

namespace {

namespace op = protocol::op;

// The entry's array or mipmapped array, from the client's id to the driver's.
bool resolve_resource(Session& s, CUarrayMapInfo* m) {
  const auto id = reinterpret_cast<uintptr_t>(m->resource.array);
  if (m->resourceType == CU_RESOURCE_TYPE_MIPMAPPED_ARRAY)
    return gen::resolve(s, id, HandleKind::CUmipmappedArray, &m->resource.mipmap);
  return m->resourceType == CU_RESOURCE_TYPE_ARRAY &&
         gen::resolve(s, id, HandleKind::CUarray, &m->resource.array);
}

CUresult mem_map_array(Session& s, const op::MemMapArray::Request& q, protocol::Empty*) {
  if (q.maps.size() > protocol::kMaxArrayMaps) return CUDA_ERROR_INVALID_VALUE;
  CUstream stream = nullptr;
  if (!gen::resolve(s, q.stream, HandleKind::CUstream, &stream)) return CUDA_ERROR_INVALID_HANDLE;
  std::vector<CUarrayMapInfo> maps = q.maps;
  for (CUarrayMapInfo& m : maps)
    if (!resolve_resource(s, &m)) return CUDA_ERROR_INVALID_HANDLE;
  const DriverTable& d = s.driver();
  auto map = q.per_thread ? d.cuMemMapArrayAsync_ptsz : d.cuMemMapArrayAsync;
  if (!map) return CUDA_ERROR_NOT_SUPPORTED;
  return map(maps.empty() ? nullptr : maps.data(), static_cast<unsigned>(maps.size()), stream);
}

CUresult mem_batch_decompress(Session& s, const op::MemBatchDecompress::Request& q,
                              op::MemBatchDecompress::Reply* reply) {
  if (q.params.size() > protocol::kMaxDecompressions) return CUDA_ERROR_INVALID_VALUE;
  CUstream stream = nullptr;
  if (!gen::resolve(s, q.stream, HandleKind::CUstream, &stream)) return CUDA_ERROR_INVALID_HANDLE;
  const DriverTable& d = s.driver();
  auto decompress = q.per_thread ? d.cuMemBatchDecompressAsync_ptsz : d.cuMemBatchDecompressAsync;
  std::vector<CUmemDecompressParams> params = q.params;
  size_t index = SIZE_MAX;
  reply->result = decompress ? decompress(params.empty() ? nullptr : params.data(), params.size(),
                                          q.flags, q.want_index ? &index : nullptr, stream)
                             : CUDA_ERROR_NOT_SUPPORTED;
  reply->index = index;
  return CUDA_SUCCESS;
}

const HandlerEntry kHandlers[] = {
    typed_entry<op::MemMapArray, mem_map_array>(),
    typed_entry<op::MemBatchDecompress, mem_batch_decompress>(),
};

}  // namespace

std::span<const HandlerEntry> struct_array_handlers() { return kHandlers; }

}  // namespace scuda::server
