// Stream requests whose argument is an array of structs: sparse array
// mappings (cuMemMapArrayAsync), whose entries name arrays by the client's
// ids, and decompression batches (cuMemBatchDecompressAsync), whose entries
// hold device addresses only.
#include <cuda.h>

#include <cstdint>
#include <vector>

#include "protocol/ops.h"
#include "server/dispatch.h"
#include "server/session.h"
#include "server_gen.h"

namespace scuda::server {

namespace {

using protocol::Reader;
using protocol::Writer;

// The entry's array or mipmapped array, from the client's id to the driver's.
bool resolve_resource(Session& s, CUarrayMapInfo* m) {
  const auto id = reinterpret_cast<uintptr_t>(m->resource.array);
  if (m->resourceType == CU_RESOURCE_TYPE_MIPMAPPED_ARRAY)
    return gen::resolve(s, id, HandleKind::CUmipmappedArray, &m->resource.mipmap);
  return m->resourceType == CU_RESOURCE_TYPE_ARRAY &&
         gen::resolve(s, id, HandleKind::CUarray, &m->resource.array);
}

template <class T>
bool read_items(Reader& in, uint64_t count, uint64_t max, std::vector<T>* items) {
  if (count > max) return false;
  items->resize(count);
  for (T& item : *items) item = in.get<T>();
  return in.ok();
}

// u8 per-thread, u64 stream id, u32 count, count x CUarrayMapInfo.
CUresult mem_map_array(Session& s, Reader& in, Writer&) {
  const bool per_thread = in.u8() != 0;
  const uint64_t stream_id = in.u64();
  std::vector<CUarrayMapInfo> maps;
  if (!read_items(in, in.u32(), protocol::kMaxArrayMaps, &maps) || !in.done()) return kMalformed;
  CUstream stream = nullptr;
  if (!gen::resolve(s, stream_id, HandleKind::CUstream, &stream)) return CUDA_ERROR_INVALID_HANDLE;
  for (CUarrayMapInfo& m : maps)
    if (!resolve_resource(s, &m)) return CUDA_ERROR_INVALID_HANDLE;
  const DriverTable& d = s.driver();
  auto map = per_thread ? d.cuMemMapArrayAsync_ptsz : d.cuMemMapArrayAsync;
  if (!map) return CUDA_ERROR_NOT_SUPPORTED;
  return map(maps.empty() ? nullptr : maps.data(), static_cast<unsigned>(maps.size()), stream);
}

// u8 per-thread, u64 stream id, u32 flags, u8 error index wanted, u64
// count, count x CUmemDecompressParams -> u32 the driver's result, u64 the
// error index (also on failure: it names the entry that failed).
CUresult mem_batch_decompress(Session& s, Reader& in, Writer& out) {
  const bool per_thread = in.u8() != 0;
  const uint64_t stream_id = in.u64();
  const unsigned flags = in.u32();
  const bool want_index = in.u8() != 0;
  std::vector<CUmemDecompressParams> params;
  if (!read_items(in, in.u64(), protocol::kMaxDecompressions, &params) || !in.done())
    return kMalformed;
  CUstream stream = nullptr;
  if (!gen::resolve(s, stream_id, HandleKind::CUstream, &stream)) return CUDA_ERROR_INVALID_HANDLE;
  const DriverTable& d = s.driver();
  auto decompress = per_thread ? d.cuMemBatchDecompressAsync_ptsz : d.cuMemBatchDecompressAsync;
  size_t index = SIZE_MAX;
  const CUresult rc = decompress
                          ? decompress(params.empty() ? nullptr : params.data(), params.size(),
                                       flags, want_index ? &index : nullptr, stream)
                          : CUDA_ERROR_NOT_SUPPORTED;
  out.u32(rc);
  out.u64(index);
  return CUDA_SUCCESS;
}

const HandlerEntry kHandlers[] = {
    {protocol::kOpMemMapArray, mem_map_array},
    {protocol::kOpMemBatchDecompress, mem_batch_decompress},
};

}  // namespace

std::span<const HandlerEntry> struct_array_handlers() { return kHandlers; }

}  // namespace scuda::server
