// cuMemAlloc_v2 without a round trip (docs/protocol.md, "Device memory"):
// the server reserves a range of device addresses once, the client places
// each allocation in it itself (DeviceAddresses), and the server maps
// memory there one-way. Near the device's capacity a map waits for its
// result, so that running out of memory is still reported by the call that
// ran out: PyTorch's caching allocator frees its cache and retries on it.
#include <cuda.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/context.h"
#include "client/device_addresses.h"
#include "client/memory.h"
#include "client/runtime.h"
#include "client/session.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

using protocol::Reader;
using protocol::Writer;

// A map waits for its result when it would leave less free device memory
// than this, or than a tenth of the device's, by the client's estimate.
constexpr uint64_t kMinMargin = uint64_t{1} << 30;

struct MappedMemory {
  std::mutex mu;  // held for each whole call, so that requests go in order
  enum class State { kUnknown, kOn, kOff } state = State::kUnknown;
  DeviceAddresses addresses;
  uint64_t range_size = 0;  // of each reservation
  uint64_t granularity = 0;
  uint64_t total = 0;
  // Free device memory as of the last reply that told it, less what was
  // mapped one-way since.
  uint64_t free_estimate = 0;
};

MappedMemory& mapped() {
  static MappedMemory* m = new MappedMemory;  // never freed: used until exit
  return *m;
}

// SCUDA_VMM=0 turns the path off; it needs one device (VMM memory would
// need cuMemSetAccess for each peer) that supports it.
bool wanted() {
  if (const char* flag = std::getenv("SCUDA_VMM"); flag && std::strcmp(flag, "0") == 0)
    return false;
  const auto& devices = snapshot().devices;
  constexpr size_t vmm = CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED;
  return devices.size() == 1 && devices[0].attrs.size() > vmm &&
         devices[0].attr_ok.size() > vmm && devices[0].attr_ok[vmm] && devices[0].attrs[vmm] == 1;
}

// Asks the server for one more range of addresses.
bool reserve(MappedMemory& m) {
  std::vector<uint8_t> reply;
  const CUresult rc = call(protocol::kOpVaReserve, Writer(), &reply);
  Reader r(reply);
  const uint64_t base = r.u64(), size = r.u64(), granularity = r.u64();
  const uint64_t free = r.u64(), total = r.u64();
  if (rc != CUDA_SUCCESS || !r.done() || granularity == 0 || size < granularity) {
    spdlog::info("device addresses could not be reserved ({}): cuMemAlloc waits for the server",
                 static_cast<int>(rc));
    return false;
  }
  m.addresses.add_range(base, size);
  m.range_size = size;
  m.granularity = granularity;
  m.total = total;
  m.free_estimate = free;
  return true;
}

bool ready(MappedMemory& m) {
  if (m.state == MappedMemory::State::kUnknown)
    m.state = wanted() && reserve(m) ? MappedMemory::State::kOn : MappedMemory::State::kOff;
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
  const uint64_t free = r.u64();
  r.u64();
  if (r.done()) m.free_estimate = free;
}

CUresult map(MappedMemory& m, uint64_t at, uint64_t size) {
  Writer w;
  w.u64(at);
  w.u64(size);
  const uint64_t margin = std::max(kMinMargin, m.total / 10);
  if (m.free_estimate >= size && m.free_estimate - size >= margin) {
    const CUresult rc = post(protocol::kOpVaMap, w);
    if (rc == CUDA_SUCCESS) m.free_estimate -= size;
    return rc;
  }
  std::vector<uint8_t> reply;
  const CUresult rc = call(protocol::kOpVaMap, w, &reply);
  refresh(m, reply);
  return rc;
}

}  // namespace

bool allocate_mapped(CUdeviceptr* dptr, size_t size, CUresult* rc) {
  if (!dptr || current_context_id() == 0) return false;
  MappedMemory& m = mapped();
  std::lock_guard lock(m.mu);
  if (!ready(m) || size < m.granularity || size > m.range_size) return false;
  const uint64_t rounded = (size + m.granularity - 1) / m.granularity * m.granularity;
  const uint64_t at = place(m, rounded);
  if (at == 0) return false;
  *rc = map(m, at, rounded);
  if (*rc == CUDA_SUCCESS) *dptr = at;
  else m.addresses.give_back(at);
  return true;
}

bool free_mapped(CUdeviceptr dptr, CUresult* rc) {
  MappedMemory& m = mapped();
  std::lock_guard lock(m.mu);
  if (m.state != MappedMemory::State::kOn || m.addresses.size_at(dptr) == 0) return false;
  Writer w;
  w.u64(dptr);
  std::vector<uint8_t> reply;
  *rc = call(protocol::kOpVaFree, w, &reply);
  // Not mapped: its one-way map failed, and a synchronizing call returns
  // (or returned) that error. Its address is free all the same.
  if (*rc == CUDA_ERROR_NOT_MAPPED) *rc = CUDA_SUCCESS;
  if (*rc != CUDA_SUCCESS) return true;
  // Forgotten before another thread can be given the address and note it.
  forget_allocation(dptr);
  m.addresses.give_back(dptr);
  refresh(m, reply);
  return true;
}

bool mapped_allocation(CUdeviceptr base) {
  MappedMemory& m = mapped();
  std::lock_guard lock(m.mu);
  return m.addresses.size_at(base) != 0;
}

}  // namespace scuda::client
