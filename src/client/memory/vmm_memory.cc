// cuMemAddressReserve and cuMemAddressFree: forwarded, and the range is
// recorded as device addresses, since memory mapped there is device memory
// that a unified copy (NCCL's cudaMemcpyDefault) must not treat as the
// client's own.
// cuMemCreate, cuMemGetAllocationGranularity and cuMemSetAccess: forwarded,
// a device location translated to its server's number. Memory located on
// the host (CU_MEM_LOCATION_TYPE_HOST and its NUMA forms) would be the
// server's host memory, mapped in the session process, and a program that
// dereferences it on its own host (NCCL's host buffers) would fault: its
// creation is refused. Its granularity is still answered, because NCCL
// probes by asking the granularity and then creating one block, treats a
// failed granularity as "host memory works", and falls back to shared memory
// only when the creation fails.
#include <cuda.h>

#include <vector>

#include <spdlog/spdlog.h>

#include "client/memory/memory.h"
#include "client/pools/route.h"
#include "client/pools/servers.h"
#include "client/runtime.h"
#include "custom.h"
#include "forward.h"

namespace {

bool on_host(const CUmemAllocationProp* prop) {
  if (prop == nullptr) return false;
  switch (prop->location.type) {
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: return true;
    default: return false;
  }
}

CUresult refuse_host(const char* name) {
  return scuda::client::unsupported(
      name,
      "memory located on the host would be the server's host memory, which this machine's "
      "pointers cannot reach; use page-locked memory (cuMemHostAlloc) instead");
}

}  // namespace

CUresult scuda::client::custom::cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                                    CUdeviceptr addr, unsigned long long flags) {
  const CUresult rc =
      scuda::client::forward::cuMemAddressReserve(ptr, size, alignment, addr, flags);
  if (rc == CUDA_SUCCESS && ptr) scuda::client::note_allocation(*ptr, size);
  return rc;
}

CUresult scuda::client::custom::cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  const CUresult rc = scuda::client::forward::cuMemAddressFree(ptr, size);
  if (rc == CUDA_SUCCESS) scuda::client::forget_allocation(ptr);
  return rc;
}

CUresult scuda::client::custom::cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                                            const CUmemAllocationProp* prop,
                                            unsigned long long flags) {
  if (on_host(prop)) return refuse_host("cuMemCreate");
  if (!prop || !scuda::client::several_servers())
    return scuda::client::forward::cuMemCreate(handle, size, prop, flags);
  scuda::client::Route route;
  CUmemAllocationProp local = *prop;
  local.location = route.location(prop->location);
  return scuda::client::forward::cuMemCreate(handle, size, &local, flags);
}

CUresult scuda::client::custom::cuMemGetAllocationGranularity(
    size_t* granularity, const CUmemAllocationProp* prop, CUmemAllocationGranularity_flags option) {
  if (!prop || !scuda::client::several_servers())
    return scuda::client::forward::cuMemGetAllocationGranularity(granularity, prop, option);
  scuda::client::Route route;
  CUmemAllocationProp local = *prop;
  local.location = route.location(prop->location);
  return scuda::client::forward::cuMemGetAllocationGranularity(granularity, &local, option);
}

CUresult scuda::client::custom::cuMemSetAccess(CUdeviceptr ptr, size_t size,
                                               const CUmemAccessDesc* desc, size_t count) {
  if (!desc || !scuda::client::several_servers())
    return scuda::client::forward::cuMemSetAccess(ptr, size, desc, count);
  scuda::client::Route route;
  std::vector<CUmemAccessDesc> local(desc, desc + count);
  for (CUmemAccessDesc& d : local) d.location = route.location(d.location);
  if (!route.ok()) return route.refuse("cuMemSetAccess");
  return scuda::client::forward::cuMemSetAccess(ptr, size, local.data(), count);
}
