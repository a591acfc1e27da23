#include "server/memory/memory_quota.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <vector>

#include <spdlog/spdlog.h>

#include "common/array_formats.h"

namespace scuda::server {

namespace {

// Physical memory made with cuMemCreate: freed once released and unmapped
// everywhere, as the driver frees it.
struct Physical {
  uint64_t size = 0;
  int mappings = 0;
  bool released = false;
};

struct Counted {
  MemoryQuota quota;
  DriverTable real;                             // the driver's own entry points
  std::atomic<uint64_t> alone{0};               // this session's count, when it has no slot
  std::mutex mu;                                // over the maps below
  std::map<CUdeviceptr, uint64_t> allocations;  // cuMemAlloc and its kin: address -> size
  std::map<CUmemGenericAllocationHandle, Physical> physical;
  std::map<CUdeviceptr, CUmemGenericAllocationHandle> mapped;  // cuMemMap's address -> memory
  std::map<const void*, uint64_t> arrays;       // CUarray and CUmipmappedArray -> size
  std::map<CUgraphExec, uint64_t> graph_execs;  // an exec -> its allocation nodes' bytes
};

// One session per process: set once, before the first request.
Counted* g = nullptr;

std::atomic<uint64_t>& own() { return g->quota.slot ? g->quota.slot->charged : g->alone; }

// What the token's sessions hold now, this one's included.
uint64_t token_total() {
  const MemoryQuota& q = g->quota;
  return q.table && q.slot ? q.table->charged_to(q.slot->token) : own().load();
}

// Counted first and checked after, so that two sessions of one token that
// allocate at once cannot both pass the cap.
bool charge(uint64_t size) {
  own().fetch_add(size);
  const uint64_t total = token_total();
  if (total <= g->quota.cap) return true;
  own().fetch_sub(size);
  spdlog::warn(
      "token '{}' is at its device memory cap of {} bytes: an allocation of {} bytes "
      "would bring its sessions to {} bytes; it fails with CUDA_ERROR_OUT_OF_MEMORY",
      g->quota.token, g->quota.cap, size, total);
  return false;
}

void credit(uint64_t size) { own().fetch_sub(size); }

// Charges `size`, makes the object with `call` and keeps its size in `kept`
// under its handle, for the matching release.
template <class Map, class Handle, class Call>
CUresult counted_make(Map& kept, Handle* h, uint64_t size, Call call) {
  if (!charge(size)) return CUDA_ERROR_OUT_OF_MEMORY;
  const CUresult rc = call();
  if (rc != CUDA_SUCCESS || !h) {
    credit(size);
    return rc;
  }
  std::lock_guard lock(g->mu);
  kept[*h] = size;
  return rc;
}

// Releases the object with `call` and credits what `kept` says it held.
template <class Map, class Key, class Call>
CUresult counted_release(Map& kept, Key key, Call call) {
  const CUresult rc = call();
  if (rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(g->mu);
  if (auto it = kept.find(key); it != kept.end()) {
    credit(it->second);
    kept.erase(it);
  }
  return rc;
}

template <class Call>
CUresult counted_alloc(CUdeviceptr* p, uint64_t size, Call call) {
  return counted_make(g->allocations, p, size, call);
}

template <class Call>
CUresult counted_free(CUdeviceptr p, Call call) {
  return counted_release(g->allocations, p, call);
}

CUresult CUDAAPI mem_alloc(CUdeviceptr* p, size_t n) {
  return counted_alloc(p, n, [&] { return g->real.cuMemAlloc_v2(p, n); });
}

CUresult CUDAAPI mem_alloc_managed(CUdeviceptr* p, size_t n, unsigned int flags) {
  return counted_alloc(p, n, [&] { return g->real.cuMemAllocManaged(p, n, flags); });
}

// Charged for the rows as asked, then for the pitch the driver chose.
CUresult CUDAAPI mem_alloc_pitch(CUdeviceptr* p, size_t* pitch, size_t width, size_t height,
                                 unsigned int element) {
  const uint64_t asked = uint64_t{width} * height;
  const CUresult rc = counted_alloc(
      p, asked, [&] { return g->real.cuMemAllocPitch_v2(p, pitch, width, height, element); });
  if (rc != CUDA_SUCCESS || !pitch || *pitch * height <= asked) return rc;
  own().fetch_add(*pitch * height - asked);
  std::lock_guard lock(g->mu);
  g->allocations[*p] = *pitch * height;
  return rc;
}

// Whether `s` is capturing: `per_thread` for the _ptsz entry points' streams.
bool capturing(CUstream s, bool per_thread) {
  auto is = per_thread ? g->real.cuStreamIsCapturing_ptsz : g->real.cuStreamIsCapturing;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  return is && is(s, &status) == CUDA_SUCCESS && status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

// A stream-ordered allocation made in a capture becomes an allocation node
// of the graph, charged when the graph is instantiated (counted_instantiate),
// not here: its memory is taken when the graph runs.
template <class Call>
CUresult stream_alloc(CUdeviceptr* p, uint64_t n, CUstream s, bool per_thread, Call call) {
  return capturing(s, per_thread) ? call() : counted_alloc(p, n, call);
}

CUresult CUDAAPI mem_alloc_async(CUdeviceptr* p, size_t n, CUstream s) {
  return stream_alloc(p, n, s, false, [&] { return g->real.cuMemAllocAsync(p, n, s); });
}

CUresult CUDAAPI mem_alloc_async_ptsz(CUdeviceptr* p, size_t n, CUstream s) {
  return stream_alloc(p, n, s, true, [&] { return g->real.cuMemAllocAsync_ptsz(p, n, s); });
}

CUresult CUDAAPI mem_alloc_pool(CUdeviceptr* p, size_t n, CUmemoryPool pool, CUstream s) {
  return stream_alloc(p, n, s, false,
                      [&] { return g->real.cuMemAllocFromPoolAsync(p, n, pool, s); });
}

CUresult CUDAAPI mem_alloc_pool_ptsz(CUdeviceptr* p, size_t n, CUmemoryPool pool, CUstream s) {
  return stream_alloc(p, n, s, true,
                      [&] { return g->real.cuMemAllocFromPoolAsync_ptsz(p, n, pool, s); });
}

CUresult CUDAAPI mem_free(CUdeviceptr p) {
  return counted_free(p, [&] { return g->real.cuMemFree_v2(p); });
}

CUresult CUDAAPI mem_free_async(CUdeviceptr p, CUstream s) {
  return counted_free(p, [&] { return g->real.cuMemFreeAsync(p, s); });
}

CUresult CUDAAPI mem_free_async_ptsz(CUdeviceptr p, CUstream s) {
  return counted_free(p, [&] { return g->real.cuMemFreeAsync_ptsz(p, s); });
}

CUresult CUDAAPI mem_create(CUmemGenericAllocationHandle* h, size_t n,
                            const CUmemAllocationProp* prop, unsigned long long flags) {
  if (!charge(n)) return CUDA_ERROR_OUT_OF_MEMORY;
  const CUresult rc = g->real.cuMemCreate(h, n, prop, flags);
  if (rc != CUDA_SUCCESS || !h) {
    credit(n);
    return rc;
  }
  std::lock_guard lock(g->mu);
  g->physical[*h] = Physical{n, 0, false};
  return rc;
}

// What an array of `levels` mipmap levels takes. Formats whose element size
// is not plain (block compressed, video) are charged 4 bytes a channel, no
// less than any of them takes.
uint64_t array_bytes(const CUDA_ARRAY3D_DESCRIPTOR& d, unsigned levels) {
  const unsigned channels = d.NumChannels ? d.NumChannels : 1;
  const uint64_t plain = format_element_bytes(d.Format, d.NumChannels);
  const uint64_t element = plain ? plain : uint64_t{4} * channels;
  uint64_t total = 0;
  for (unsigned l = 0; l < std::max(levels, 1u) && l < 64; ++l) {
    const auto level = [l](size_t extent) { return std::max<uint64_t>(uint64_t{extent} >> l, 1); };
    total += level(d.Width) * level(d.Height) * level(d.Depth) * element;
  }
  return total;
}

template <class Handle, class Call>
CUresult counted_array(Handle* h, uint64_t size, Call call) {
  return counted_make(g->arrays, h, size, call);
}

template <class Call>
CUresult counted_array_destroy(const void* h, Call call) {
  return counted_release(g->arrays, h, call);
}

CUresult CUDAAPI array_create(CUarray* h, const CUDA_ARRAY_DESCRIPTOR* d) {
  if (!d) return g->real.cuArrayCreate_v2(h, d);
  const CUDA_ARRAY3D_DESCRIPTOR d3{d->Width, d->Height, 0, d->Format, d->NumChannels, 0};
  return counted_array(h, array_bytes(d3, 1), [&] { return g->real.cuArrayCreate_v2(h, d); });
}

CUresult CUDAAPI array3d_create(CUarray* h, const CUDA_ARRAY3D_DESCRIPTOR* d) {
  if (!d) return g->real.cuArray3DCreate_v2(h, d);
  return counted_array(h, array_bytes(*d, 1), [&] { return g->real.cuArray3DCreate_v2(h, d); });
}

CUresult CUDAAPI mipmapped_create(CUmipmappedArray* h, const CUDA_ARRAY3D_DESCRIPTOR* d,
                                  unsigned int levels) {
  if (!d) return g->real.cuMipmappedArrayCreate(h, d, levels);
  return counted_array(h, array_bytes(*d, levels),
                       [&] { return g->real.cuMipmappedArrayCreate(h, d, levels); });
}

CUresult CUDAAPI array_destroy(CUarray h) {
  return counted_array_destroy(h, [&] { return g->real.cuArrayDestroy(h); });
}

CUresult CUDAAPI mipmapped_destroy(CUmipmappedArray h) {
  return counted_array_destroy(h, [&] { return g->real.cuMipmappedArrayDestroy(h); });
}

// Physical memory that is released and mapped nowhere is gone. Under g->mu.
void forget_if_freed(std::map<CUmemGenericAllocationHandle, Physical>::iterator it) {
  if (!it->second.released || it->second.mappings > 0) return;
  credit(it->second.size);
  g->physical.erase(it);
}

CUresult CUDAAPI mem_release(CUmemGenericAllocationHandle h) {
  const CUresult rc = g->real.cuMemRelease(h);
  if (rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(g->mu);
  if (auto it = g->physical.find(h); it != g->physical.end()) {
    it->second.released = true;
    forget_if_freed(it);
  }
  return rc;
}

CUresult CUDAAPI mem_map(CUdeviceptr p, size_t n, size_t offset, CUmemGenericAllocationHandle h,
                         unsigned long long flags) {
  const CUresult rc = g->real.cuMemMap(p, n, offset, h, flags);
  if (rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(g->mu);
  if (auto it = g->physical.find(h); it != g->physical.end()) {
    ++it->second.mappings;
    g->mapped[p] = h;
  }
  return rc;
}

CUresult CUDAAPI mem_unmap(CUdeviceptr p, size_t n) {
  const CUresult rc = g->real.cuMemUnmap(p, n);
  if (rc != CUDA_SUCCESS) return rc;
  std::lock_guard lock(g->mu);
  auto m = g->mapped.lower_bound(p);
  while (m != g->mapped.end() && m->first < p + n) {
    if (auto it = g->physical.find(m->second); it != g->physical.end()) {
      --it->second.mappings;
      forget_if_freed(it);
    }
    m = g->mapped.erase(m);
  }
  return rc;
}

// What a graph's allocation nodes take when it runs, its child graphs'
// included; 0 where the driver cannot say.
uint64_t graph_alloc_bytes(CUgraph graph) {
  const DriverTable& d = g->real;
  size_t n = 0;
  if (!d.cuGraphGetNodes || !d.cuGraphNodeGetType || !d.cuGraphMemAllocNodeGetParams ||
      d.cuGraphGetNodes(graph, nullptr, &n) != CUDA_SUCCESS)
    return 0;
  std::vector<CUgraphNode> nodes(n);
  if (n && d.cuGraphGetNodes(graph, nodes.data(), &n) != CUDA_SUCCESS) return 0;
  uint64_t bytes = 0;
  for (CUgraphNode node : nodes) {
    CUgraphNodeType type;
    CUDA_MEM_ALLOC_NODE_PARAMS alloc{};
    CUgraph child = nullptr;
    if (d.cuGraphNodeGetType(node, &type) != CUDA_SUCCESS) continue;
    if (type == CU_GRAPH_NODE_TYPE_MEM_ALLOC &&
        d.cuGraphMemAllocNodeGetParams(node, &alloc) == CUDA_SUCCESS)
      bytes += alloc.bytesize;
    else if (type == CU_GRAPH_NODE_TYPE_GRAPH && d.cuGraphChildGraphNodeGetGraph &&
             d.cuGraphChildGraphNodeGetGraph(node, &child) == CUDA_SUCCESS)
      bytes += graph_alloc_bytes(child);
  }
  return bytes;
}

// An exec holds its graph's allocation nodes' memory from its instantiation
// to its destruction: the driver keeps it for the exec's launches, so the
// cap counts it for that long.
template <class Call>
CUresult counted_instantiate(CUgraphExec* exec, CUgraph graph, Call call) {
  const uint64_t bytes = graph_alloc_bytes(graph);
  return bytes ? counted_make(g->graph_execs, exec, bytes, call) : call();
}

CUresult CUDAAPI instantiate_with_flags(CUgraphExec* e, CUgraph graph, unsigned long long flags) {
  return counted_instantiate(e, graph,
                             [&] { return g->real.cuGraphInstantiateWithFlags(e, graph, flags); });
}

CUresult CUDAAPI instantiate_with_params(CUgraphExec* e, CUgraph graph,
                                         CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  return counted_instantiate(
      e, graph, [&] { return g->real.cuGraphInstantiateWithParams(e, graph, params); });
}

CUresult CUDAAPI instantiate_with_params_ptsz(CUgraphExec* e, CUgraph graph,
                                              CUDA_GRAPH_INSTANTIATE_PARAMS* params) {
  return counted_instantiate(
      e, graph, [&] { return g->real.cuGraphInstantiateWithParams_ptsz(e, graph, params); });
}

CUresult CUDAAPI exec_destroy(CUgraphExec e) {
  return counted_release(g->graph_execs, e, [&] { return g->real.cuGraphExecDestroy(e); });
}

// A program that asks how much memory there is sees its token's cap.
CUresult CUDAAPI mem_get_info(size_t* free, size_t* total) {
  const CUresult rc = g->real.cuMemGetInfo_v2(free, total);
  if (rc != CUDA_SUCCESS) return rc;
  const uint64_t used = token_total(), cap = g->quota.cap;
  if (free) *free = std::min<uint64_t>(*free, cap > used ? cap - used : 0);
  if (total) *total = std::min<uint64_t>(*total, cap);
  return rc;
}

// Replaces `slot` with `ours` where the driver has the entry point.
template <class Fn>
void replace(Fn* slot, Fn ours) {
  if (*slot) *slot = ours;
}

}  // namespace

void enforce_memory_quota(DriverTable* d, MemoryQuota quota) {
  if (quota.cap == 0 || g) return;
  g = new Counted;  // never freed: the session's process uses it until it exits
  g->quota = std::move(quota);
  g->real = *d;
  replace(&d->cuMemAlloc_v2, mem_alloc);
  replace(&d->cuMemAllocManaged, mem_alloc_managed);
  replace(&d->cuMemAllocPitch_v2, mem_alloc_pitch);
  replace(&d->cuMemAllocAsync, mem_alloc_async);
  replace(&d->cuMemAllocAsync_ptsz, mem_alloc_async_ptsz);
  replace(&d->cuMemAllocFromPoolAsync, mem_alloc_pool);
  replace(&d->cuMemAllocFromPoolAsync_ptsz, mem_alloc_pool_ptsz);
  replace(&d->cuMemFree_v2, mem_free);
  replace(&d->cuMemFreeAsync, mem_free_async);
  replace(&d->cuMemFreeAsync_ptsz, mem_free_async_ptsz);
  replace(&d->cuMemCreate, mem_create);
  replace(&d->cuMemRelease, mem_release);
  replace(&d->cuMemMap, mem_map);
  replace(&d->cuMemUnmap, mem_unmap);
  replace(&d->cuMemGetInfo_v2, mem_get_info);
  replace(&d->cuArrayCreate_v2, array_create);
  replace(&d->cuArray3DCreate_v2, array3d_create);
  replace(&d->cuMipmappedArrayCreate, mipmapped_create);
  replace(&d->cuArrayDestroy, array_destroy);
  replace(&d->cuMipmappedArrayDestroy, mipmapped_destroy);
  replace(&d->cuGraphInstantiateWithFlags, instantiate_with_flags);
  replace(&d->cuGraphInstantiateWithParams, instantiate_with_params);
  replace(&d->cuGraphInstantiateWithParams_ptsz, instantiate_with_params_ptsz);
  replace(&d->cuGraphExecDestroy, exec_destroy);
  spdlog::info("token '{}': device memory capped at {} bytes across its sessions", g->quota.token,
               g->quota.cap);
}

}  // namespace scuda::server
