// Managed memory (cuMemAllocManaged): the server allocates it, and the
// client maps host pages at the very same addresses (coherent_pages.h), so
// one pointer serves the host and the device as it does natively.
#include <map>
#include <mutex>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/managed/coherent_pages.h"
#include "client/memory/memory.h"
#include "client/pools/route.h"
#include "client/runtime.h"
#include "client/state.h"
#include "common/lock_order.h"
#include "custom.h"
#include "forward.h"

namespace scuda::client {

namespace {

// Server allocations that collided with the client's own mappings are held
// while we ask again, so the next answer lands elsewhere.
constexpr int kAttempts = 8;

}  // namespace

namespace parts {

struct ManagedAllocations {
  RankedMutex mu{LockRank::kLeaf, "ManagedAllocations::mu"};
  std::map<CUdeviceptr, size_t> sizes;
};

}  // namespace parts

namespace {

parts::ManagedAllocations& managed() { return client_state().managed_allocations.get(); }

}  // namespace

CUresult allocate_managed(CUdeviceptr* dptr, size_t size, unsigned flags) {
  if (!dptr) return CUDA_ERROR_INVALID_VALUE;
  // The host's copy of managed memory is kept coherent with one server.
  if (routed_server() != 0)
    return unsupported("cuMemAllocManaged",
                       "with several servers, managed memory lives on the first server's GPUs "
                       "only (docs/pools.md)");
  std::vector<CUdeviceptr> collided;
  CUresult rc = CUDA_SUCCESS;
  for (int attempt = 0; attempt < kAttempts; ++attempt) {
    CUdeviceptr p = 0;
    rc = forward::cuMemAllocManaged(&p, size, flags);
    if (rc != CUDA_SUCCESS) break;
    if (coherence::map(p, size)) {
      note_allocation(p, size);
      std::lock_guard lock(managed().mu);
      managed().sizes[p] = size;
      *dptr = p;
      break;
    }
    spdlog::debug("managed memory at {:#x} collides with the client's own mappings", p);
    collided.push_back(p);
    rc = CUDA_ERROR_OUT_OF_MEMORY;
  }
  for (CUdeviceptr p : collided) forward::cuMemFree_v2(p);
  if (rc == CUDA_ERROR_OUT_OF_MEMORY && !collided.empty())
    spdlog::debug("managed memory: {} server addresses in a row were taken in this process",
                  kAttempts);
  return rc;
}

CUresult free_managed(CUdeviceptr base, CUresult (*free_on_server)(CUdeviceptr)) {
  size_t size = 0;
  {
    std::lock_guard lock(managed().mu);
    auto it = managed().sizes.find(base);
    if (it != managed().sizes.end()) size = it->second;
  }
  if (size) coherence::retire(base);
  const CUresult rc = free_on_server(base);
  if (!size) return rc;
  if (rc != CUDA_SUCCESS) {
    coherence::keep(base, size);
    return rc;
  }
  {
    std::lock_guard lock(managed().mu);
    managed().sizes.erase(base);
  }
  coherence::unmap(base, size);
  return rc;
}

namespace {

bool to_host(CUmemLocation where) {
  return where.type == CU_MEM_LOCATION_TYPE_HOST || where.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
         where.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
}

template <class Forward>
CUresult prefetch(Forward forward, CUdeviceptr ptr, size_t count, CUmemLocation where,
                  unsigned flags, CUstream stream) {
  CUresult rc = forward(ptr, count, where, flags, stream);
  if (rc == CUDA_SUCCESS && to_host(where)) coherence::want_on_host(ptr, count);
  return rc;
}

// Advice the client acts on besides the server's driver: a preferred
// location on the host. Read-mostly advice changes nothing here: device
// work may still write such memory, and nothing tells the client whether
// it did, so the host's pages are invalidated after device work all the
// same.
void advise(CUdeviceptr ptr, size_t count, CUmem_advise advice, CUmemLocation where) {
  if (advice == CU_MEM_ADVISE_SET_PREFERRED_LOCATION)
    coherence::prefer_host(ptr, count, to_host(where));
  else if (advice == CU_MEM_ADVISE_UNSET_PREFERRED_LOCATION)
    coherence::prefer_host(ptr, count, false);
}

}  // namespace

}  // namespace scuda::client

using namespace scuda::client;

CUresult scuda::client::custom::cuMemAllocManaged(CUdeviceptr* dptr, size_t size,
                                                  unsigned int flags) {
  const CUresult rc = allocate_managed(dptr, size, flags);
  if (rc == CUDA_ERROR_OUT_OF_MEMORY)
    spdlog::error(
        "cuMemAllocManaged of {} bytes: no address the server offered was free in this "
        "process (or the server is out of memory)",
        size);
  return rc;
}

CUresult scuda::client::custom::cuMemAdvise_v2(CUdeviceptr ptr, size_t count, CUmem_advise advice,
                                               CUmemLocation where) {
  const CUresult rc = forward::cuMemAdvise_v2(ptr, count, advice, where);
  if (rc == CUDA_SUCCESS) advise(ptr, count, advice, where);
  return rc;
}

// One attribute at a time, each into its own buffer, as the singular call
// answers them.
CUresult scuda::client::custom::cuMemRangeGetAttributes(void** data, size_t* sizes,
                                                        CUmem_range_attribute* attributes, size_t n,
                                                        CUdeviceptr ptr, size_t count) {
  if (n == 0 || !data || !sizes || !attributes) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < n; ++i) {
    if (CUresult rc = forward::cuMemRangeGetAttribute(data[i], sizes[i], attributes[i], ptr, count);
        rc != CUDA_SUCCESS)
      return rc;
  }
  return CUDA_SUCCESS;
}

// The entry point and its per-thread twin are generated (codegen, `twins`);
// this is their body.
CUresult scuda::client::custom::cuMemPrefetchAsync_v2(CUdeviceptr ptr, size_t count,
                                                      CUmemLocation where, unsigned int flags,
                                                      CUstream stream, DefaultStream d) {
  return scuda::client::prefetch(
      [&](CUdeviceptr p, size_t n, CUmemLocation w, unsigned f, CUstream s) {
        return forward::cuMemPrefetchAsync_v2(p, n, w, f, s, d);
      },
      ptr, count, where, flags, stream);
}
