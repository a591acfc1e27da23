// Registered host memory stays the program's, where it is: nothing here may
// protect it, since it shares pages with the heap and a system call writing
// into a protected page fails instead of faulting. So the session mirrors it
// (server/memory/host_mirrors.h), and a twin here, of the bytes the mirror holds,
// tells which bytes the host changed: they are pushed before every request
// that may start device work. The session keeps the same kind of twin, and
// after a synchronizing call the bytes the device changed come back.
// The cost is a comparison of the range at each launch, so only ranges that
// device work has named are kept in step; the others the device cannot
// reach, and their twins still tell what their mirrors hold
// (docs/managed-memory.md, "Registered host memory").
#include "client/memory/registered_memory.h"

#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/managed/coherent_pages.h"
#include "client/memory/host_memory.h"
#include "client/memory/published_spans.h"
#include "client/op_calls.h"
#include "client/runtime.h"
#include "client/state.h"
#include "client/transport/session.h"
#include "common/changed_runs.h"
#include "common/lock_order.h"
#include "protocol/frame.h"
#include "protocol/ops.h"

namespace scuda::client::registered {
namespace {

using protocol::kChunkSize;

struct Range {
  size_t size;
  unsigned flags;
  CUdeviceptr device;
  uint8_t* twin;      // zeros at first, as the session's new mirror
  bool implicit;      // mirrored for a graph node or captured copy, not by the program
  bool in_step;       // named by device work: pushed and pulled
  bool gone = false;  // implicit, and found unmapped: no longer kept in step
  // Pulled once: the session sends its changes ahead of each synchronizing
  // reply that asks for them, and no pull is needed.
  bool kept = false;
};

}  // namespace

namespace parts {

struct RegisteredMemory {
  RankedMutex mu{LockRank::kCoherence, "RegisteredMemory::mu"};
  std::map<uintptr_t, Range> ranges;  // by address
  bool outstanding = false;           // device work sent since all streams were idle
  size_t kept = 0;                    // ranges whose changes the session sends unasked
};

}  // namespace parts

namespace {

parts::RegisteredMemory& registry() { return client_state().registered_memory.get(); }

std::atomic<bool> g_any{false};
// The ranges not yet kept in step, and those mirrored at another address,
// which launches search without the lock.
PublishedSpans g_unnamed;
PublishedSpans g_elsewhere;

// With the registry's lock held, after a range came, went or was named.
void publish_unnamed() {
  PublishedSpans::Spans unnamed;
  PublishedSpans::Spans elsewhere;
  for (const auto& [base, r] : registry().ranges) {
    if (!r.in_step) unnamed.emplace_back(base, base + r.size);
    if (r.device != base) elsewhere.emplace_back(base, base + r.size);
  }
  g_unnamed.publish(std::move(unnamed));
  g_elsewhere.publish(std::move(elsewhere));
}

// With the registry's lock held: the range holding `p`, or end().
std::map<uintptr_t, Range>::iterator find_range(const void* p) {
  auto& ranges = registry().ranges;
  const auto address = reinterpret_cast<uintptr_t>(p);
  auto it = ranges.upper_bound(address);
  if (it == ranges.begin()) return ranges.end();
  --it;
  return address - it->first < it->second.size ? it : ranges.end();
}

bool overlaps(uintptr_t address, size_t size) {
  auto& ranges = registry().ranges;
  auto it = ranges.lower_bound(address + size);
  if (it == ranges.begin()) return false;
  --it;
  return it->first + it->second.size > address;
}

// Sends the runs where `now` (the program's bytes at `address`) differs
// from `twin`, which then holds what was sent, even if the host writes on.
void push_changes(Connection& conn, uintptr_t address, uint8_t* twin, const uint8_t* now,
                  size_t size) {
  for_each_changed_run(now, twin, size, [&](size_t at, size_t n) {
    std::memcpy(twin + at, now + at, n);
    for (size_t off = 0; off < n; off += kChunkSize) {
      const size_t k = std::min(kChunkSize, n - off);
      const auto* bytes = reinterpret_cast<const char*>(twin + at + off);
      post_data<protocol::op::MirrorPush>(conn, {address + at + off, std::string_view(bytes, k)});
      coherence::count_traffic(k, 0);
    }
  });
}

// An implicit range names memory the program may have freed since (it never
// says), so its bytes are read and written with process_vm_readv/writev,
// which fail where a plain access would fault. A range found unmapped is
// left alone from then on.
bool move_safely(uintptr_t address, void* local, size_t size, bool read) {
  iovec mine{local, size};
  iovec its{reinterpret_cast<void*>(address), size};
  const ssize_t n = read ? process_vm_readv(getpid(), &mine, 1, &its, 1, 0)
                         : process_vm_writev(getpid(), &mine, 1, &its, 1, 0);
  return n == static_cast<ssize_t>(size);
}

void push(Connection& conn, uintptr_t base, Range& r) {
  if (r.gone || !r.in_step) return;
  if (!r.implicit)
    return push_changes(conn, base, r.twin, reinterpret_cast<const uint8_t*>(base), r.size);
  std::vector<uint8_t> now(std::min(kChunkSize, r.size));
  for (size_t off = 0; off < r.size; off += kChunkSize) {
    const size_t n = std::min(kChunkSize, r.size - off);
    if (!move_safely(base + off, now.data(), n, true)) {
      spdlog::debug("host memory {:#x}+{} mirrored for a graph is gone", base, r.size);
      r.gone = true;
      return;
    }
    push_changes(conn, base + off, r.twin + off, now.data(), n);
  }
}

// Writes one run the device changed into the range and its twin.
bool apply_run(uintptr_t base, Range& r, uint64_t address, std::string_view bytes) {
  if (address < base || address - base > r.size || bytes.size() > r.size - (address - base))
    return false;
  if (r.gone) return true;
  if (!r.implicit) std::memcpy(reinterpret_cast<void*>(address), bytes.data(), bytes.size());
  else if (!move_safely(address, const_cast<char*>(bytes.data()), bytes.size(), false))
    r.gone = true;
  std::memcpy(r.twin + (address - base), bytes.data(), bytes.size());
  coherence::count_traffic(0, bytes.size());
  return true;
}

// Writes the runs of a mirror-pull reply into the range and its twin.
bool apply(uintptr_t base, Range& r, const std::vector<uint8_t>& reply) {
  protocol::Reader in(reply);
  protocol::op::MirrorChanges changes;
  if (!protocol::read(in, &changes)) return false;
  for (const protocol::op::ChangedRun& run : changes.runs)
    if (!apply_run(base, r, run.address, run.bytes)) return false;
  return true;
}

// Pipelined: every window is asked for before the first reply is read.
// Once pulled whole, the range is kept: the session sends its changes with
// synchronizing replies from then on.
void pull(Connection& conn, uintptr_t base, Range& r) {
  if ((r.flags & CU_MEMHOSTREGISTER_READ_ONLY) || !r.in_step) return;
  bool pulled = true;
  std::vector<uint64_t> asked;
  for (size_t off = 0; off < r.size; off += kChunkSize) {
    uint64_t id = 0;
    if (!send_request<protocol::op::MirrorPull>(
            conn, {base + off, std::min(kChunkSize, r.size - off)}, &id))
      return;
    asked.push_back(id);
  }
  for (uint64_t id : asked) {
    std::vector<uint8_t> reply;
    const CUresult rc = conn.receive(id, &reply);
    if (rc != CUDA_SUCCESS)
      spdlog::error(
          "registered memory at {:#x}: pulling the device's changes failed ({}); the "
          "host sees stale data",
          base, static_cast<int>(rc));
    else if (!apply(base, r, reply)) bad_reply("mirror-pull");
    pulled = pulled && rc == CUDA_SUCCESS;
  }
  if (pulled && !r.kept) {
    r.kept = true;
    ++registry().kept;
  }
}

void warn_other_address() {
  static std::once_flag once;
  std::call_once(once, [] {
    spdlog::warn(
        "host memory is mirrored at another address in the session (its own was taken "
        "there): kernel arguments pointing into it are rewritten, but a pointer to it that "
        "a kernel reads from memory reaches the wrong place; such programs must store the "
        "address cuMemHostGetDevicePointer gives");
  });
}

constexpr unsigned kKnownFlags = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
                                 CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;

// With the registry's lock held: apply_changes.
bool apply_changes_locked(protocol::Reader& in) {
  protocol::op::MirrorChanges changes;
  if (!protocol::read(in, &changes)) return false;
  for (const protocol::op::ChangedRun& run : changes.runs) {
    // A range unregistered meanwhile no longer wants its changes.
    auto it = find_range(reinterpret_cast<const void*>(run.address));
    if (it != registry().ranges.end() && !apply_run(it->first, it->second, run.address, run.bytes))
      return false;
  }
  return true;
}

}  // namespace

// `implicit`: mirrored for a graph node or a captured copy, not by the
// program, so a page-locked block of the client's may be mirrored too.
CUresult register_range(void* p, size_t size, unsigned flags, bool implicit) {
  if (!connection()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!p || size == 0 || (flags & ~kKnownFlags)) return CUDA_ERROR_INVALID_VALUE;
  if (flags & CU_MEMHOSTREGISTER_IOMEMORY) {
    spdlog::error(
        "cuMemHostRegister: I/O memory of this machine cannot be mapped by a GPU on "
        "another machine");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  const auto address = reinterpret_cast<uintptr_t>(p);
  {
    std::lock_guard lock(registry().mu);
    if (overlaps(address, size) || (!implicit && is_host_block(p)))
      return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
  }
  void* twin = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (twin == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  protocol::op::HostRegister::Reply reply;
  const CUresult rc = ask<protocol::op::HostRegister>({address, size, flags}, &reply);
  const CUdeviceptr device = reply.device;
  if (rc != CUDA_SUCCESS) {
    munmap(twin, size);
    return rc;
  }
  if (device != address) warn_other_address();
  std::lock_guard lock(registry().mu);
  registry().ranges[address] =
      Range{size, flags, device, static_cast<uint8_t*>(twin), implicit, implicit};
  g_any.store(true, std::memory_order_release);
  publish_unnamed();
  return CUDA_SUCCESS;
}

// Bytes the device wrote since the last synchronization are pulled first:
// afterwards the memory is the program's alone.
CUresult unregister_range(void* p) {
  const CUresult forgotten = with_connection([&](Connection& conn) {
    std::lock_guard lock(registry().mu);
    auto& ranges = registry().ranges;
    auto it = ranges.find(reinterpret_cast<uintptr_t>(p));
    if (it == ranges.end()) return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    if (registry().outstanding) pull(conn, it->first, it->second);
    if (it->second.kept) --registry().kept;
    munmap(it->second.twin, it->second.size);
    ranges.erase(it);
    g_any.store(!ranges.empty(), std::memory_order_release);
    publish_unnamed();
    return CUDA_SUCCESS;
  });
  if (forgotten != CUDA_SUCCESS) return forgotten;
  return ask<protocol::op::HostUnregister>({reinterpret_cast<uintptr_t>(p)});
}

bool find(const void* p, unsigned* flags, CUdeviceptr* device) {
  if (!g_any.load(std::memory_order_acquire)) return false;
  std::lock_guard lock(registry().mu);
  auto it = find_range(p);
  if (it == registry().ranges.end()) return false;
  *flags = it->second.flags;
  *device = it->second.device + (reinterpret_cast<uintptr_t>(p) - it->first);
  return true;
}

void name_for_device(const void* p) {
  if (!g_unnamed.any()) return;
  std::lock_guard lock(registry().mu);
  auto it = find_range(p);
  if (it == registry().ranges.end() || it->second.in_step) return;
  it->second.in_step = true;
  publish_unnamed();
  spdlog::debug(
      "registered memory {:#x}+{} is named by device work: kept in step with its "
      "mirror from now on",
      it->first, it->second.size);
}

void name_arguments(const uint8_t* args, size_t size) {
  g_unnamed.for_each_word_inside(
      args, size, [](uint64_t word, size_t) { name_for_device(reinterpret_cast<void*>(word)); });
}

// A range's end (one past its last byte) is left alone: it is as likely
// the start of the memory that follows, which a rewrite would corrupt.
CUdeviceptr translated(CUdeviceptr p) {
  if (!g_elsewhere.any() || !PublishedSpans::contains(*g_elsewhere.snapshot(), p)) return p;
  unsigned flags = 0;
  CUdeviceptr device = 0;
  return find(reinterpret_cast<const void*>(p), &flags, &device) ? device : p;
}

void translate_arguments(uint8_t* args, size_t size) {
  g_elsewhere.for_each_word_inside(args, size, [&](uint64_t word, size_t at) {
    const CUdeviceptr device = translated(word);
    std::memcpy(args + at, &device, sizeof device);
  });
}

bool in_step_covers(const void* p, size_t size, CUdeviceptr* device) {
  if (!covers(p, size, device)) return false;
  std::lock_guard lock(registry().mu);
  auto it = find_range(p);
  return it != registry().ranges.end() && it->second.in_step;
}

bool covers(const void* p, size_t size, CUdeviceptr* device) {
  const auto* first = static_cast<const uint8_t*>(p);
  const uint8_t* last = first + (size ? size - 1 : 0);
  unsigned flags = 0;
  CUdeviceptr end = 0;
  return find(first, &flags, device) && find(last, &flags, &end) &&
         end - *device == size_t(last - first);
}

bool implicit_overlaps(uintptr_t* start, uintptr_t* stop, std::vector<uintptr_t>* bases) {
  std::lock_guard lock(registry().mu);
  auto& ranges = registry().ranges;
  auto it = ranges.upper_bound(*start);
  if (it != ranges.begin()) --it;
  for (; it != ranges.end() && it->first < *stop; ++it) {
    if (it->first + it->second.size <= *start) continue;
    if (!it->second.implicit) return false;
    bases->push_back(it->first);
    *start = std::min(*start, it->first);
    *stop = std::max(*stop, it->first + it->second.size);
  }
  return true;
}

bool any() { return g_any.load(std::memory_order_acquire); }

bool apply_changes(protocol::Reader& in) {
  std::lock_guard lock(registry().mu);
  return apply_changes_locked(in);
}

void before_device_work(Connection& conn) {
  if (!g_any.load(std::memory_order_acquire)) return;
  std::lock_guard lock(registry().mu);
  for (auto& [base, r] : registry().ranges) push(conn, base, r);
  registry().outstanding = true;
}

uint16_t want_changes() {
  if (!g_any.load(std::memory_order_acquire)) return 0;
  std::lock_guard lock(registry().mu);
  return registry().outstanding && registry().kept ? protocol::kWantChanges : 0;
}

void after_sync(Connection& conn, bool whole_context) {
  // Taken whatever comes next, so that no change outlives its request.
  std::vector<std::vector<uint8_t>> came;
  const bool changes_came = conn.take_mirror_changes(&came);
  if (!g_any.load(std::memory_order_acquire)) return;
  std::lock_guard lock(registry().mu);
  for (const std::vector<uint8_t>& changes : came)
    if (protocol::Reader in(changes); !apply_changes_locked(in)) bad_reply("mirror-pull");
  if (!registry().outstanding) return;
  for (auto& [base, r] : registry().ranges)
    if (!(changes_came && r.kept)) pull(conn, base, r);
  if (whole_context) registry().outstanding = false;
}

}  // namespace scuda::client::registered
