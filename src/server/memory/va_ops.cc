// Device memory at addresses the client chooses (docs/protocol.md, "Device
// memory"): the session reserves ranges of device addresses, and maps and
// unmaps physical memory in them where the client says, with the driver's
// virtual memory management calls. Every address is checked against what
// the session holds (VaSpace) before the driver sees it.
#include <map>
#include <optional>
#include <vector>

#include "protocol/ops.h"
#include "server/memory/va_map.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"
#include "server/session/typed_handler.h"

namespace scuda::server {

namespace {

namespace op = protocol::op;

// A reservation is this many times the device's memory: room for a caching
// allocator's fragmentation without reserving again.
constexpr uint64_t kReserveFactor = 4;

bool has_vmm(const DriverTable& d) {
  return d.cuMemAddressReserve && d.cuMemCreate && d.cuMemMap && d.cuMemSetAccess && d.cuMemUnmap &&
         d.cuMemRelease && d.cuMemGetAllocationGranularity && d.cuCtxGetDevice &&
         d.cuMemGetInfo_v2 && d.cuCtxSynchronize;
}

// Whether memory of `dev` can be exported as a POSIX descriptor (IPC needs
// it). Asked of the driver once per device: every map would ask again, and
// only the session's request thread maps memory (a session is a process of
// its own, so the answers are this session's).
bool exports_descriptors(const DriverTable& d, CUdevice dev) {
  static std::map<CUdevice, bool> known;
  if (auto it = known.find(dev); it != known.end()) return it->second;
  int supported = 0;
  const bool yes = d.cuDeviceGetAttribute &&
                   d.cuDeviceGetAttribute(
                       &supported, CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
                       dev) == CUDA_SUCCESS &&
                   supported;
  known[dev] = yes;
  return yes;
}

// Who may read and write memory of `dev`: itself, and every other device
// the driver says can reach it. Peer access (cuCtxEnablePeerAccess) opens
// cuMemAlloc memory to a peer but not memory mapped this way, which only
// cuMemSetAccess opens; so a peer is given access at the map, and a
// program that enables peer access reads the memory as it would natively.
// Asked of the driver once per device, as exports_descriptors is.
const std::vector<CUmemAccessDesc>& access_for(const DriverTable& d, CUdevice dev) {
  static std::map<CUdevice, std::vector<CUmemAccessDesc>> known;
  if (auto it = known.find(dev); it != known.end()) return it->second;
  std::vector<CUmemAccessDesc>& access = known[dev];
  auto allow = [&](CUdevice who) {
    CUmemAccessDesc desc{};
    desc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = who;
    desc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    access.push_back(desc);
  };
  allow(dev);
  int count = 1;
  if (!d.cuDeviceGetCount || !d.cuDeviceCanAccessPeer || d.cuDeviceGetCount(&count) != CUDA_SUCCESS)
    return access;
  for (CUdevice other = 0; other < count; ++other) {
    int can = 0;
    if (other != dev && d.cuDeviceCanAccessPeer(&can, other, dev) == CUDA_SUCCESS && can)
      allow(other);
  }
  return access;
}

// Waits for the work of `dev`'s primary context when it is active: memory
// of another device than the current context's may be freed (cudart frees
// from whichever device is current), and that device's kernels may still
// use it. A primary context that is not active has no work.
CUresult sync_primary(const DriverTable& d, CUdevice dev) {
  unsigned flags = 0;
  int active = 0;
  if (!d.cuDevicePrimaryCtxGetState || !d.cuDevicePrimaryCtxRetain || !d.cuCtxPushCurrent_v2 ||
      !d.cuCtxSynchronize || !d.cuCtxPopCurrent_v2 || !d.cuDevicePrimaryCtxRelease_v2 ||
      d.cuDevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS || !active)
    return CUDA_SUCCESS;
  CUcontext ctx = nullptr;
  if (CUresult rc = d.cuDevicePrimaryCtxRetain(&ctx, dev); rc != CUDA_SUCCESS) return rc;
  CUresult rc = d.cuCtxPushCurrent_v2(ctx);
  if (rc == CUDA_SUCCESS) {
    rc = d.cuCtxSynchronize();
    d.cuCtxPopCurrent_v2(nullptr);
  }
  d.cuDevicePrimaryCtxRelease_v2(dev);
  return rc;
}

// The device's free and total memory, for the client's estimate; nothing
// when the driver cannot tell.
std::optional<op::MemoryInfo> memory_info(const DriverTable& d) {
  size_t free = 0, total = 0;
  if (!d.cuMemGetInfo_v2 || d.cuMemGetInfo_v2(&free, &total) != CUDA_SUCCESS) return std::nullopt;
  return op::MemoryInfo{free, total};
}

// The hint (0: none) is where a client of several servers wants the range, above its
// other servers' (the driver may place it elsewhere; the client checks).
CUresult va_reserve(Session& s, const op::VaReserve::Request& q, op::VaReserve::Reply* a) {
  const uint64_t hint = q.hint;
  const DriverTable& d = s.driver();
  if (!has_vmm(d)) return CUDA_ERROR_NOT_SUPPORTED;
  if (s.va().full()) return CUDA_ERROR_OUT_OF_MEMORY;
  CUdevice dev = 0;
  if (CUresult rc = d.cuCtxGetDevice(&dev); rc != CUDA_SUCCESS) return rc;
  const CUmemAllocationProp prop = placed_memory(s, dev);
  size_t granularity = 0, free = 0, total = 0;
  CUresult rc =
      d.cuMemGetAllocationGranularity(&granularity, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM);
  if (rc == CUDA_SUCCESS) rc = d.cuMemGetInfo_v2(&free, &total);
  if (rc != CUDA_SUCCESS) return rc;
  if (granularity == 0 || total == 0) return CUDA_ERROR_NOT_SUPPORTED;
  const uint64_t size = (kReserveFactor * total + granularity - 1) / granularity * granularity;
  CUdeviceptr base = 0;
  const CUdeviceptr at = hint % granularity == 0 ? hint : 0;
  if ((rc = d.cuMemAddressReserve(&base, size, 0, at, 0)) != CUDA_SUCCESS) return rc;
  s.va().add_reservation(base, size, granularity, dev);
  *a = {base, size, granularity, {free, total}};
  return CUDA_SUCCESS;
}

// Memory of the current context's device at [address, address + size).
// Once mapped, the mapping holds the memory: unmapping it frees it.
CUresult map(Session& s, uint64_t address, uint64_t size) {
  if (!s.va().can_map(address, size)) return CUDA_ERROR_INVALID_VALUE;
  const DriverTable& d = s.driver();
  CUdevice dev = 0;
  if (CUresult rc = d.cuCtxGetDevice(&dev); rc != CUDA_SUCCESS) return rc;
  const CUmemAllocationProp prop = placed_memory(s, dev);
  CUmemGenericAllocationHandle memory = 0;
  if (CUresult rc = d.cuMemCreate(&memory, size, &prop, 0); rc != CUDA_SUCCESS) return rc;
  const CUresult rc = map_at(s, dev, address, size, memory);
  d.cuMemRelease(memory);
  return rc;
}

// One-way, or answered with the device's memory, also when the map failed,
// so that the client's estimate is fresh.
CUresult va_map(Session& s, const op::VaMap::Request& q, std::optional<op::MemoryInfo>* reply) {
  const CUresult rc = map(s, q.address, q.size);
  if (!(s.request().flags & protocol::kOneWay)) *reply = memory_info(s.driver());
  return rc;
}

// u64 address (where a va-map mapped); one-way. Waits for the context's
// work first, as cuMemFree does: queued kernels may still use the memory.
// Unmaps even when the wait fails: the client has given the address back
// already. An address with nothing mapped is left alone, without an error:
// the client frees one only when its one-way map failed, and that failure
// was reported on its own.
CUresult va_free(Session& s, const op::VaFree::Request& q, protocol::Empty*) {
  const uint64_t address = q.address;
  const uint64_t size = s.va().mapping_size(address);
  if (size == 0) return CUDA_SUCCESS;
  const DriverTable& d = s.driver();
  CUresult synced = d.cuCtxSynchronize();
  CUdevice current = 0;
  const int owner = s.va().owner(address);
  if (synced == CUDA_SUCCESS && d.cuCtxGetDevice(&current) == CUDA_SUCCESS && owner >= 0 &&
      owner != current)
    synced = sync_primary(d, owner);
  const CUresult rc = d.cuMemUnmap(address, size);
  if (rc == CUDA_SUCCESS) {
    s.va().remove_mapping(address);
    s.ipc().drop(address);
  }
  return synced != CUDA_SUCCESS ? synced : rc;
}

// Nothing; one-way. Waits for the context's work: the client freed a small
// allocation, whose slot it may hand out again without asking.
CUresult va_sync(Session& s, const protocol::Empty&, protocol::Empty*) {
  const DriverTable& d = s.driver();
  return has_vmm(d) ? d.cuCtxSynchronize() : CUDA_ERROR_NOT_SUPPORTED;
}

const HandlerEntry kHandlers[] = {
    typed_entry<op::VaReserve, va_reserve>(),
    reporting_entry<op::VaMap, va_map>(),
    typed_entry<op::VaFree, va_free>(),
    typed_entry<op::VaSync, va_sync>(),
};

}  // namespace

CUmemAllocationProp placed_memory(const Session& s, CUdevice dev) {
  CUmemAllocationProp prop{};
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  prop.location.id = dev;
  if (exports_descriptors(s.driver(), dev))
    prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  return prop;
}

CUresult map_at(Session& s, CUdevice dev, uint64_t address, uint64_t size,
                CUmemGenericAllocationHandle memory) {
  if (!s.va().can_map(address, size) || s.va().owner(address) != dev)
    return CUDA_ERROR_INVALID_VALUE;
  const DriverTable& d = s.driver();
  if (CUresult rc = d.cuMemMap(address, size, 0, memory, 0); rc != CUDA_SUCCESS) return rc;
  const std::vector<CUmemAccessDesc>& access = access_for(d, dev);
  if (CUresult rc = d.cuMemSetAccess(address, size, access.data(), access.size());
      rc != CUDA_SUCCESS) {
    d.cuMemUnmap(address, size);
    return rc;
  }
  s.va().add_mapping(address, size);
  return CUDA_SUCCESS;
}

std::span<const HandlerEntry> va_handlers() { return kHandlers; }

}  // namespace scuda::server
