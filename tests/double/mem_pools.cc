// Memory pools: created on a device, with the access other devices have,
// allocated from on a stream of that device's context. Enough to check that
// each call names devices by this driver's numbers.
#include <cuda.h>

#include <map>
#include <memory>

#include "allocations.h"
#include "state.h"

using namespace scuda_double;

namespace {

struct MemPool {
  CUdevice device = 0;
  std::map<CUdevice, CUmemAccess_flags> access;  // devices granted access
};

// Guarded by the state's lock, as every entry point holds it (Call).
Registry<MemPool>& pools() {
  static Registry<MemPool> registry{0xC0000000};
  return registry;
}

// A device location of this driver, or nullopt-like false.
bool device_location(const CUmemLocation& location) {
  return location.type == CU_MEM_LOCATION_TYPE_DEVICE && valid_device(location.id);
}

}  // namespace

extern "C" {

CUresult cuMemPoolCreate(CUmemoryPool* pool, const CUmemPoolProps* props) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  if (!pool || !props || props->allocType != CU_MEM_ALLOCATION_TYPE_PINNED)
    return CUDA_ERROR_INVALID_VALUE;
  if (!device_location(props->location)) return CUDA_ERROR_INVALID_DEVICE;
  auto p = std::make_unique<MemPool>();
  p->device = props->location.id;
  p->access[p->device] = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  *pool = as_handle<CUmemoryPool>(pools().add(std::move(p)));
  return CUDA_SUCCESS;
}

CUresult cuMemPoolDestroy(CUmemoryPool pool) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  return pools().erase(pool) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc* map, size_t count) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  MemPool* p = pools().find(pool);
  if (!p || (count && !map)) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < count; ++i)
    if (!device_location(map[i].location)) return CUDA_ERROR_INVALID_DEVICE;
  for (size_t i = 0; i < count; ++i) p->access[map[i].location.id] = map[i].flags;
  return CUDA_SUCCESS;
}

CUresult cuMemPoolGetAccess(CUmemAccess_flags* flags, CUmemoryPool pool, CUmemLocation* location) {
  Call call = begin();
  if (call.status != CUDA_SUCCESS) return call.status;
  const MemPool* p = pools().find(pool);
  if (!p || !flags || !location) return CUDA_ERROR_INVALID_VALUE;
  if (!device_location(*location)) return CUDA_ERROR_INVALID_DEVICE;
  auto it = p->access.find(location->id);
  *flags = it == p->access.end() ? CU_MEM_ACCESS_FLAGS_PROT_NONE : it->second;
  return CUDA_SUCCESS;
}

// On a stream of a context of the pool's device, at once.
CUresult cuMemAllocFromPoolAsync(CUdeviceptr* dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream) {
  Call call = begin_on_stream(hStream);
  if (call.status != CUDA_SUCCESS) return call.status;
  const MemPool* p = pools().find(pool);
  if (!p || !dptr || bytesize == 0) return CUDA_ERROR_INVALID_VALUE;
  if (p->device != call.ctx->device) return CUDA_ERROR_INVALID_DEVICE;
  return allocate(bytesize, call.ctx_id, 0, dptr);
}

}  // extern "C"
