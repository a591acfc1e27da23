// cuMemAddressReserve and cuMemAddressFree: forwarded, and the range is
// recorded as device addresses, since memory mapped there is device memory
// that a unified copy (NCCL's cudaMemcpyDefault) must not treat as the
// client's own.
// cuMemCreate and cuMemGetAllocationGranularity: forwarded. Memory located on
// the host (CU_MEM_LOCATION_TYPE_HOST and its NUMA forms) would be the
// server's host memory, mapped in the session process, and a program that
// dereferences it on its own host (NCCL's host buffers) would fault: its
// creation is refused. Its granularity is still answered, because NCCL
// probes by asking the granularity and then creating one block, treats a
// failed granularity as "host memory works", and falls back to shared memory
// only when the creation fails.
#include <cuda.h>

#include <spdlog/spdlog.h>

#include "client/memory.h"
#include "client/runtime.h"
#include "forward.h"

namespace {

bool on_host(const CUmemAllocationProp* prop) {
  if (prop == nullptr) return false;
  switch (prop->location.type) {
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT:
      return true;
    default:
      return false;
  }
}

CUresult refuse_host(const char* name) {
  return scuda::client::unsupported(
      name, "memory located on the host would be the server's host memory, which this machine's "
            "pointers cannot reach; use page-locked memory (cuMemHostAlloc) instead");
}

}  // namespace

extern "C" {

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr* ptr, size_t size, size_t alignment,
                                     CUdeviceptr addr, unsigned long long flags) {
  SCUDA_PASSTHROUGH(cuMemAddressReserve, ptr, size, alignment, addr, flags);
  const CUresult rc = scuda::client::forward::cuMemAddressReserve(ptr, size, alignment, addr, flags);
  if (rc == CUDA_SUCCESS && ptr) scuda::client::note_allocation(*ptr, size);
  return rc;
}

CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  SCUDA_PASSTHROUGH(cuMemAddressFree, ptr, size);
  const CUresult rc = scuda::client::forward::cuMemAddressFree(ptr, size);
  if (rc == CUDA_SUCCESS) scuda::client::forget_allocation(ptr);
  return rc;
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle* handle, size_t size,
                             const CUmemAllocationProp* prop, unsigned long long flags) {
  SCUDA_PASSTHROUGH(cuMemCreate, handle, size, prop, flags);
  if (on_host(prop)) return refuse_host("cuMemCreate");
  return scuda::client::forward::cuMemCreate(handle, size, prop, flags);
}

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t* granularity, const CUmemAllocationProp* prop,
                                               CUmemAllocationGranularity_flags option) {
  SCUDA_PASSTHROUGH(cuMemGetAllocationGranularity, granularity, prop, option);
  return scuda::client::forward::cuMemGetAllocationGranularity(granularity, prop, option);
}

}  // extern "C"
