// The client's record of device memory: allocations and module globals.
#include <map>
#include <mutex>

#include <spdlog/spdlog.h>

#include "client/contexts/context.h"
#include "client/memory/memory.h"
#include "client/modules/library_loads.h"
#include "client/runtime.h"
#include "client/state.h"
#include "common/lock_order.h"
#include "custom.h"
#include "forward.h"

namespace scuda::client {

namespace parts {

struct Allocations {
  RankedMutex mu{LockRank::kLeaf, "Allocations::mu"};
  std::map<CUdeviceptr, size_t> ranges;  // base -> size
};

}  // namespace parts

namespace {

parts::Allocations& allocations() { return client_state().allocations.get(); }

}  // namespace

void note_allocation(CUdeviceptr base, size_t size) {
  std::lock_guard lock(allocations().mu);
  allocations().ranges[base] = size;
}

void forget_allocation(CUdeviceptr base) {
  std::lock_guard lock(allocations().mu);
  allocations().ranges.erase(base);
}

// A module or library global, recorded like an allocation so that unified
// copies know it is device memory.
template <class Forward, class Owner>
CUresult get_global(Forward forward, CUdeviceptr* dptr, size_t* bytes, Owner owner,
                    const char* name) {
  size_t size = 0;
  CUresult rc = forward(dptr, &size, owner, name);
  if (rc != CUDA_SUCCESS) return rc;
  if (dptr) note_allocation(*dptr, size);
  if (bytes) *bytes = size;
  return rc;
}

namespace {

// The allocation holding `address`; false when none does.
bool find_allocation(CUdeviceptr address, CUdeviceptr* base, size_t* size) {
  std::lock_guard lock(allocations().mu);
  auto& ranges = allocations().ranges;
  auto it = ranges.upper_bound(address);
  if (it == ranges.begin()) return false;
  --it;
  if (address - it->first >= it->second) return false;
  *base = it->first;
  *size = it->second;
  return true;
}

}  // namespace

bool inside_allocation(CUdeviceptr base, size_t size) {
  CUdeviceptr start = 0;
  size_t length = 0;
  if (!find_allocation(base, &start, &length)) return false;
  return size <= start + length - base;
}

bool mapped_range(CUdeviceptr address, CUdeviceptr* base, size_t* size) {
  return find_allocation(address, base, size) && mapped_allocation(*base);
}

bool runs_past_mapped(CUdeviceptr address, size_t size) {
  CUdeviceptr base = 0;
  size_t length = 0;
  return mapped_range(address, &base, &length) && size > base + length - address;
}

bool is_device_address(const void* p) {
  return inside_allocation(reinterpret_cast<CUdeviceptr>(p), 1);
}

}  // namespace scuda::client

using scuda::client::note_allocation;

CUresult scuda::client::custom::cuMemAlloc_v2(CUdeviceptr* dptr, size_t size) {
  CUresult rc = CUDA_SUCCESS;
  if (!scuda::client::allocate_mapped(dptr, size, &rc))
    rc = scuda::client::forward::cuMemAlloc_v2(dptr, size);
  if (rc == CUDA_SUCCESS) note_allocation(*dptr, size);
  return rc;
}

CUresult scuda::client::custom::cuMemAllocPitch_v2(CUdeviceptr* dptr, size_t* pitch, size_t width,
                                                   size_t height, unsigned int element_size) {
  CUresult rc =
      scuda::client::forward::cuMemAllocPitch_v2(dptr, pitch, width, height, element_size);
  if (rc == CUDA_SUCCESS) note_allocation(*dptr, *pitch * height);
  return rc;
}

CUresult scuda::client::custom::cuMemFree_v2(CUdeviceptr dptr) {
  // cudart's cudaFree(nullptr) comes here: the driver does nothing and
  // answers CUDA_SUCCESS (tests/gpu/diagnostics/free_null.c asks NVIDIA's).
  if (dptr == 0 && scuda::client::current_context_id() != 0) return CUDA_SUCCESS;
  CUresult rc = CUDA_SUCCESS;
  if (scuda::client::free_mapped(dptr, &rc)) return rc;
  spdlog::debug("cuMemFree_v2({:#x}): not placed by this client; the server answers", dptr);
  rc = scuda::client::free_managed(dptr, scuda::client::forward::cuMemFree_v2);
  if (rc == CUDA_SUCCESS) scuda::client::forget_allocation(dptr);
  return rc;
}

CUresult scuda::client::custom::cuMemGetAddressRange_v2(CUdeviceptr* pbase, size_t* psize,
                                                        CUdeviceptr dptr) {
  CUdeviceptr base = 0;
  size_t size = 0;
  if (!scuda::client::mapped_range(dptr, &base, &size))
    return scuda::client::forward::cuMemGetAddressRange_v2(pbase, psize, dptr);
  if (pbase) *pbase = base;
  if (psize) *psize = size;
  return CUDA_SUCCESS;
}

CUresult scuda::client::custom::cuModuleGetGlobal_v2(CUdeviceptr* dptr, size_t* bytes, CUmodule mod,
                                                     const char* name) {
  return scuda::client::get_global(scuda::client::forward::cuModuleGetGlobal_v2, dptr, bytes, mod,
                                   name);
}

CUresult scuda::client::custom::cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes,
                                                   CUlibrary library, const char* name) {
  if (CUresult rc = scuda::client::library_ready(scuda::client::handle_id(library));
      rc != CUDA_SUCCESS)
    return rc;
  return scuda::client::get_global(scuda::client::forward::cuLibraryGetGlobal, dptr, bytes, library,
                                   name);
}
