// cuMemAlloc_v2 and cuMemFree_v2 without a round trip (docs/protocol.md,
// "Device memory"): the server reserves a range of device addresses once per
// device, the client places each allocation in the range of its current
// context's device itself (DeviceAddresses; smaller
// ones in slots of chunks it places, SmallAllocations), and the server maps
// and unmaps memory there one-way. Near the device's capacity a map waits
// for its result, so that running out of memory is still reported by the
// call that ran out: PyTorch's caching allocator frees its cache and retries
// on it.
#include <cuda.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/contexts/context.h"
#include "client/memory/device_addresses.h"
#include "client/memory/memory.h"
#include "client/memory/small_allocations.h"
#include "client/op_calls.h"
#include "client/pools/route.h"
#include "client/pools/servers.h"
#include "client/runtime.h"
#include "client/state.h"
#include "client/transport/session.h"
#include "common/lock_order.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

namespace op = protocol::op;
using protocol::Reader;

// A map waits for its result when it would leave less free device memory
// than this, or than a tenth of the device's, by the client's estimate.
constexpr uint64_t kMinMargin = uint64_t{1} << 30;

// One device's ranges and what the client placed in them. Each device has
// ranges of its own, reserved with one of its contexts current, so that
// the device an address belongs to is the device the server mapped there.
struct MappedMemory {
  enum class State { kUnknown, kOn, kOff } state = State::kUnknown;
  CUdevice device = 0;
  DeviceAddresses addresses;
  SmallAllocations small;
  uint64_t range_size = 0;  // of each reservation
  uint64_t granularity = 0;
  uint64_t total = 0;
  // Free device memory as of the last reply that told it, less what was
  // mapped one-way since, plus what was unmapped.
  uint64_t free_estimate = 0;
};

}  // namespace

namespace parts {

struct MappedPlacements {
  RankedMutex mu{LockRank::kRoundTrip,
                 "MappedMemory::mu"};  // held for each whole call, so that requests go in order
  std::map<CUdevice, MappedMemory> devices;
};

}  // namespace parts

namespace {

using parts::MappedPlacements;

MappedPlacements& placements() { return client_state().mapped_placements.get(); }

// The current context's device's placements; null without a current context.
MappedMemory* current(MappedPlacements& p) {
  CUdevice dev = 0;
  if (!current_device(&dev)) return nullptr;
  MappedMemory& m = p.devices[dev];
  m.device = dev;
  return &m;
}

// SCUDA_VMM=0 turns the path off; it needs a device that supports it.
bool wanted(CUdevice dev) {
  if (const char* flag = std::getenv("SCUDA_VMM"); flag && std::strcmp(flag, "0") == 0)
    return false;
  const auto& devices = snapshot().devices;
  if (dev < 0 || static_cast<size_t>(dev) >= devices.size()) return false;
  const auto& d = devices[dev];
  constexpr size_t vmm = CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED;
  return d.attrs.size() > vmm && d.attr_ok.size() > vmm && d.attr_ok[vmm] && d.attrs[vmm] == 1;
}

// Where another server's ranges may not be: with several servers, each
// reserves its ranges above every range so far, so that the client's
// allocations on two servers never share an address (route.h). Ranges are a
// GiB apart, which the granularity divides.
constexpr uint64_t kRangeGap = uint64_t{1} << 30;

// Where the next reservation is asked for: above every range reserved so
// far, else (when the driver placed it elsewhere, over another server's)
// below them all; 0: anywhere.
uint64_t next_hint(const MappedPlacements& p, uint64_t size, bool below) {
  uint64_t low = UINT64_MAX, high = 0;
  for (const auto& [dev, m] : p.devices) {
    if (m.addresses.end() == 0) continue;
    low = std::min(low, m.addresses.start());
    high = std::max(high, m.addresses.end());
  }
  if (high == 0) return 0;
  if (!below) return (high + 2 * kRangeGap - 1) / kRangeGap * kRangeGap;
  const uint64_t room = size + 2 * kRangeGap;
  return low > room ? (low - room) / kRangeGap * kRangeGap : 0;
}

// True when [base, base + size) meets a range of another server's device.
bool meets_other_server(const MappedPlacements& p, CUdevice dev, uint64_t base, uint64_t size) {
  for (const auto& [other, m] : p.devices) {
    if (!on_two_servers(other, dev) || m.addresses.end() == 0) continue;
    if (base < m.addresses.end() && base + size > m.addresses.start()) return true;
  }
  return false;
}

// One reservation, at `hint` (0: where the driver likes); false, having
// said why, when it failed.
bool reserve_at(uint64_t hint, uint64_t* base, uint64_t* size, MappedMemory& m) {
  op::VaReserve::Reply reply;
  const CUresult rc = ask<op::VaReserve>({hint}, &reply);
  *base = reply.base, *size = reply.size;
  const uint64_t granularity = reply.granularity;
  if (rc != CUDA_SUCCESS || granularity == 0 || *size < granularity) {
    spdlog::info("device addresses could not be reserved ({}): cuMemAlloc waits for the server",
                 static_cast<int>(rc));
    return false;
  }
  m.granularity = granularity;
  m.total = reply.memory.total;
  m.free_estimate = reply.memory.free;
  return true;
}

// Asks the server for one more range of addresses. With several servers a
// range must meet no other server's: one the driver placed over another's
// stays reserved, unused, and the next is asked for below every range.
bool reserve(MappedMemory& m) {
  const MappedPlacements& p = placements();
  uint64_t base = 0, size = 0;
  bool placed = false;
  for (const bool below : {false, true}) {
    const uint64_t hint = several_servers() ? next_hint(p, size, below) : 0;
    if (!reserve_at(hint, &base, &size, m)) return false;
    placed = !several_servers() || !meets_other_server(p, m.device, base, size);
    if (placed || hint == 0) break;
    spdlog::debug("device {}'s range came at {:#x}, over another server's; asking below", m.device,
                  base);
  }
  if (!placed) {
    spdlog::info(
        "device {}'s server reserved addresses another server uses: cuMemAlloc on it "
        "waits for the server",
        m.device);
    return false;
  }
  m.addresses.add_range(base, size);
  m.range_size = size;
  m.small.set_chunk_size(m.granularity);
  return true;
}

bool ready(MappedMemory& m) {
  if (m.state == MappedMemory::State::kUnknown)
    m.state = wanted(m.device) && reserve(m) ? MappedMemory::State::kOn : MappedMemory::State::kOff;
  return m.state == MappedMemory::State::kOn;
}

// A free address for `size` bytes, reserving another range if none has
// room; 0 when that fails.
uint64_t place(MappedMemory& m, uint64_t size) {
  if (const uint64_t at = m.addresses.take(size)) return at;
  return reserve(m) ? m.addresses.take(size) : 0;
}

// Takes the free memory a reply tells (u64 free, u64 total), if it does.
void refresh(MappedMemory& m, const std::vector<uint8_t>& reply) {
  Reader r(reply);
  op::MemoryInfo info;
  if (protocol::read(r, &info)) m.free_estimate = info.free;
}

CUresult map(MappedMemory& m, uint64_t at, uint64_t size) {
  const op::VaMap::Request request{at, size};
  const uint64_t margin = std::max(kMinMargin, m.total / 10);
  if (m.free_estimate >= size && m.free_estimate - size >= margin) {
    const CUresult rc = tell<op::VaMap>(request);
    if (rc == CUDA_SUCCESS) m.free_estimate -= size;
    return rc;
  }
  // Answered even when the map failed, so that the estimate is fresh.
  std::vector<uint8_t> reply;
  const CUresult rc = call(op::VaMap::kOp, protocol::encode(request), &reply);
  refresh(m, reply);
  return rc;
}

// Places and maps `size` bytes, a multiple of the granularity. False when
// no address is free for them; else *rc is the map's result and, when it
// succeeded, *at the address.
bool map_new(MappedMemory& m, uint64_t size, uint64_t* at, CUresult* rc) {
  *at = place(m, size);
  if (*at == 0) return false;
  *rc = map(m, *at, size);
  if (*rc != CUDA_SUCCESS) m.addresses.give_back(*at);
  return true;
}

bool allocate_large(MappedMemory& m, uint64_t size, CUdeviceptr* dptr, CUresult* rc) {
  const uint64_t rounded = (size + m.granularity - 1) / m.granularity * m.granularity;
  uint64_t at = 0;
  if (!map_new(m, rounded, &at, rc)) return false;
  if (*rc == CUDA_SUCCESS) *dptr = at;
  return true;
}

bool allocate_small(MappedMemory& m, uint64_t size, CUdeviceptr* dptr, CUresult* rc) {
  uint64_t at = m.small.take(size);
  if (at == 0) {
    uint64_t chunk = 0;
    if (!map_new(m, m.granularity, &chunk, rc)) return false;
    if (*rc != CUDA_SUCCESS) return true;
    m.small.add_chunk(chunk, size);
    at = m.small.take(size);
  }
  *rc = CUDA_SUCCESS;
  *dptr = at;
  return true;
}

// An allocation of allocate_large's starts at `base` (a chunk is placed the
// same way, but is no allocation of the program's).
bool large_at(const MappedMemory& m, uint64_t base) {
  return m.addresses.size_at(base) != 0 && !m.small.chunk_at(base);
}

// Unmaps what is mapped at `at` one-way; the server waits for the context's
// work first, in request order, as cuMemFree does. Its address is free at
// once: a later map there comes after the unmap.
// Memory another session exported frees nothing of the device's when
// unmapped here (`frees` false).
CUresult unmap(MappedMemory& m, uint64_t at, bool frees = true) {
  if (const CUresult rc = tell<op::VaFree>({at}); rc != CUDA_SUCCESS) return rc;
  if (frees) m.free_estimate += m.addresses.size_at(at);
  m.addresses.give_back(at);
  return CUDA_SUCCESS;
}

// A freed slot is handed out again without asking the server, so work
// queued before the free (on any stream) could still be using it when work
// queued after its reuse starts. Native cuMemFree waits for the device, so
// the free waits on the server too, one-way, in request order: va-sync, or
// the va-free of its chunk, which waits as well. Waiting at the free rather
// than at the reuse keeps cuMemAlloc from synchronizing, which the driver's
// never does (stream capture forbids it).
CUresult free_small(MappedMemory& m, uint64_t at) {
  if (const uint64_t idle = m.small.give_back(at)) return unmap(m, idle);
  return tell<op::VaSync>({});
}

// The device's placements that hold an allocation of allocate_mapped's
// starting at `base`, or null.
MappedMemory* holding(MappedPlacements& p, uint64_t base) {
  for (auto& [dev, m] : p.devices)
    if (m.small.in_use(base) || large_at(m, base)) return &m;
  return nullptr;
}

}  // namespace

bool allocate_mapped(CUdeviceptr* dptr, size_t size, CUresult* rc) {
  if (!dptr) return false;
  MappedPlacements& p = placements();
  std::lock_guard lock(p.mu);
  MappedMemory* m = current(p);
  if (!m || !ready(*m) || size == 0 || size > m->range_size) return false;
  return m->small.serves(size) ? allocate_small(*m, size, dptr, rc)
                               : allocate_large(*m, size, dptr, rc);
}

bool free_mapped(CUdeviceptr dptr, CUresult* rc) {
  // Without a context the server could not wait for the device's work.
  if (current_context_id() == 0) return false;
  MappedPlacements& p = placements();
  std::lock_guard lock(p.mu);
  MappedMemory* m = holding(p, dptr);
  if (!m) return false;
  const bool small = m->small.in_use(dptr);
  Route route;
  route.device_memory(m->device);
  // Forgotten before another thread can be given the address and note it.
  forget_allocation(dptr);
  forget_attributes(dptr);
  *rc = small ? free_small(*m, dptr) : unmap(*m, dptr);
  return true;
}

bool map_imported(uint64_t size, const std::function<CUresult(uint64_t at)>& open, uint64_t* at,
                  CUresult* rc) {
  MappedPlacements& p = placements();
  std::lock_guard lock(p.mu);
  MappedMemory* m = current(p);
  if (!m || !ready(*m) || size == 0 || size % m->granularity != 0) return false;
  *at = place(*m, size);
  if (*at == 0) return false;
  *rc = open(*at);
  if (*rc != CUDA_SUCCESS) m->addresses.give_back(*at);
  return true;
}

CUresult unmap_imported(uint64_t at) {
  MappedPlacements& p = placements();
  std::lock_guard lock(p.mu);
  for (auto& [dev, m] : p.devices) {
    if (m.addresses.size_at(at) == 0) continue;
    Route route;
    route.device_memory(dev);
    return unmap(m, at, false);
  }
  return CUDA_ERROR_INVALID_VALUE;
}

bool mapped_allocation(CUdeviceptr base) {
  MappedPlacements& p = placements();
  std::lock_guard lock(p.mu);
  return holding(p, base) != nullptr;
}

bool placed_device(uint64_t address, CUdevice* dev) {
  MappedPlacements& p = placements();
  std::lock_guard lock(p.mu);
  for (const auto& [d, m] : p.devices) {
    // Only what the client placed: another server's driver knows nothing
    // of this range and may put its own memory at the same addresses.
    if (!m.addresses.in_use(address)) continue;
    *dev = d;
    return true;
  }
  return false;
}

}  // namespace scuda::client
