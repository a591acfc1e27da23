#include "server/memory/host_mirrors.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include <spdlog/spdlog.h>

#include "common/changed_runs.h"
#include "protocol/frame.h"
#include "protocol/op_layouts.h"

namespace scuda::server {

namespace {

// Adds the runs where `now` differs from `twin`, as views into the twin,
// which is brought up to date: the client is about to have them. The
// views hold only while the mirrors' lock does, so they are encoded under it.
void collect_changes(uint64_t address, const uint8_t* now, uint8_t* twin, size_t size,
                     protocol::op::MirrorChanges* out) {
  for_each_changed_run(now, twin, size, [&](size_t at, size_t n) {
    std::memcpy(twin + at, now + at, n);
    out->runs.push_back({address + at, {reinterpret_cast<const char*>(twin + at), n}});
  });
}

void* map_anonymous(void* at, size_t size) {
  const int fixed = at ? MAP_FIXED_NOREPLACE : 0;
  void* p = mmap(at, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | fixed, -1, 0);
  if (p == MAP_FAILED) return nullptr;
  if (at && p != at) {  // kernels before 4.17 take the flag as a hint
    munmap(p, size);
    return nullptr;
  }
  return p;
}

// A mirror may be made or dropped while the program captures a stream in
// global mode, which forbids registering memory on a thread that has not
// relaxed its own mode. The mirror is the session's, not part of the
// capture, so this thread relaxes its mode for the call.
class RelaxedCapture {
 public:
  explicit RelaxedCapture(const DriverTable& d) : exchange_(d.cuThreadExchangeStreamCaptureMode) {
    if (exchange_) exchange_(&mode_);
  }
  ~RelaxedCapture() {
    if (exchange_) exchange_(&mode_);
  }
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  decltype(DriverTable::cuThreadExchangeStreamCaptureMode) exchange_;
  CUstreamCaptureMode mode_ = CU_STREAM_CAPTURE_MODE_RELAXED;
};

}  // namespace

CUresult HostMirrors::add(const DriverTable& d, uint64_t address, uint64_t size, unsigned flags,
                          CUdeviceptr* device) {
  if (!d.cuMemHostRegister_v2 || !d.cuMemHostGetDevicePointer_v2) return CUDA_ERROR_NOT_SUPPORTED;
  const bool live = flags & protocol::op::kLiveMirror;
  flags &= ~protocol::op::kLiveMirror;
  if (live && (address % sizeof(uint64_t) || size % sizeof(uint64_t)))
    return CUDA_ERROR_INVALID_VALUE;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t base = address & ~(page - 1);
  if (size == 0 || address + size < address) return CUDA_ERROR_INVALID_VALUE;
  std::lock_guard lock(mu_);
  if (overlaps(address, size)) return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  const size_t map_size = (address - base + size + page - 1) & ~(page - 1);
  void* map = map_anonymous(reinterpret_cast<void*>(base), map_size);
  if (!map) {
    spdlog::warn(
        "registered host memory at {:#x} is taken in the session: its mirror goes "
        "elsewhere, and the client rewrites kernel arguments that point into it",
        address);
    map = map_anonymous(nullptr, map_size);
  }
  void* twin_map = map ? map_anonymous(nullptr, map_size) : nullptr;
  if (!twin_map) {
    if (map) munmap(map, map_size);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  flags |= CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE;
  uint8_t* host = static_cast<uint8_t*>(map) + (address - base);
  RelaxedCapture relaxed(d);
  CUresult rc = d.cuMemHostRegister_v2(map, map_size, flags);
  if (rc == CUDA_SUCCESS) rc = d.cuMemHostGetDevicePointer_v2(device, host, 0);
  if (rc != CUDA_SUCCESS) {
    if (d.cuMemHostUnregister) d.cuMemHostUnregister(map);
    munmap(map, map_size);
    munmap(twin_map, map_size);
    return rc;
  }
  uint8_t* twin = static_cast<uint8_t*>(twin_map) + (address - base);
  mirrors_[address] = Mirror{size, host, twin, map, twin_map, map_size, false, live};
  return CUDA_SUCCESS;
}

CUresult HostMirrors::remove(const DriverTable& d, uint64_t address) {
  std::lock_guard lock(mu_);
  auto it = mirrors_.find(address);
  if (it == mirrors_.end()) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
  const Mirror m = it->second;
  mirrors_.erase(it);
  RelaxedCapture relaxed(d);
  const CUresult rc =
      d.cuMemHostUnregister ? d.cuMemHostUnregister(m.map) : CUDA_ERROR_NOT_SUPPORTED;
  munmap(m.map, m.map_size);
  munmap(m.twin_map, m.map_size);
  return rc;
}

HostMirrors::Mirror* HostMirrors::find(uint64_t address, uint64_t size, uint64_t* offset) {
  auto it = mirrors_.upper_bound(address);
  if (it == mirrors_.begin()) return nullptr;
  --it;
  *offset = address - it->first;
  return *offset < it->second.size && size <= it->second.size - *offset ? &it->second : nullptr;
}

bool HostMirrors::overlaps(uint64_t address, uint64_t size) const {
  auto it = mirrors_.lower_bound(address + size);
  if (it == mirrors_.begin()) return false;
  --it;
  return it->first + it->second.size > address;
}

bool HostMirrors::write(uint64_t address, std::string_view bytes) {
  std::lock_guard lock(mu_);
  uint64_t offset = 0;
  Mirror* m = find(address, bytes.size(), &offset);
  if (!m || m->live) return false;  // a live mirror's words travel on its channel alone
  std::memcpy(m->host + offset, bytes.data(), bytes.size());
  std::memcpy(m->twin + offset, bytes.data(), bytes.size());
  return true;
}

bool HostMirrors::take_changes(uint64_t address, uint64_t size, protocol::Writer& out) {
  std::lock_guard lock(mu_);
  uint64_t offset = 0;
  Mirror* m = find(address, size, &offset);
  if (!m || m->live) return false;
  m->kept = true;
  protocol::op::MirrorChanges changes;
  collect_changes(address, m->host + offset, m->twin + offset, size, &changes);
  protocol::write(out, changes);
  return true;
}

bool HostMirrors::take_window_changes(bool all, const std::function<bool(protocol::Writer)>& send) {
  std::lock_guard lock(mu_);
  for (auto& [address, m] : mirrors_) {
    if ((!all && !m.kept) || m.live) continue;
    for (uint64_t at = 0; at < m.size; at += protocol::kChunkSize) {
      const uint64_t n = std::min<uint64_t>(protocol::kChunkSize, m.size - at);
      protocol::op::MirrorChanges changes;
      collect_changes(address + at, m.host + at, m.twin + at, n, &changes);
      if (!changes.runs.empty() && !send(protocol::encode(changes))) return false;
    }
  }
  return true;
}

void HostMirrors::take_live_changes(std::vector<live::Run>* runs) {
  std::lock_guard lock(mu_);
  std::vector<live::Block> blocks;
  for (auto& [address, m] : mirrors_)
    if (m.live) blocks.push_back({address, m.host, m.twin, m.size});
  live::take_snapshot(blocks, runs, live::shared_scan_threads());
}

bool HostMirrors::write_live(const std::vector<live::Run>& runs) {
  std::lock_guard lock(mu_);
  std::vector<live::Landing> landings;
  for (const live::Run& run : runs) {
    // Words of a mirror the client dropped while they travelled are dropped.
    if (!overlaps(run.address, std::max<uint64_t>(run.bytes.size(), 1))) continue;
    uint64_t offset = 0;
    Mirror* m = find(run.address, run.bytes.size(), &offset);
    if (!m || !m->live || offset % sizeof(uint64_t) || run.bytes.size() % sizeof(uint64_t))
      return false;
    landings.push_back({run.address, m->host + offset, m->twin + offset, run.bytes});
  }
  live::apply_turn(landings);
  return true;
}

}  // namespace scuda::server
