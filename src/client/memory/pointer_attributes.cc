// cuPointerGetAttribute(s). Device memory is the server's to describe; the
// client's own page-locked blocks (host_memory.cc) are described here. An
// allocation the client placed (mapped_allocations.cc) keeps the server's
// answers until it is freed, as they do not change while it lives.
#include <atomic>
#include <cstring>
#include <map>
#include <mutex>
#include <utility>
#include <vector>

#include "client/memory/host_memory.h"
#include "client/memory/memory.h"
#include "client/op_calls.h"
#include "client/pools/route.h"
#include "client/pools/servers.h"
#include "client/runtime.h"
#include "client/state.h"
#include "client/transport/session.h"
#include "common/lock_order.h"
#include "custom.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

// How many bytes the driver writes for each attribute (cuda.h documents
// booleans and enums as unsigned int); 0 for an attribute it does not know.
size_t value_size(CUpointer_attribute a) {
  switch (a) {
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS: return sizeof(CUDA_POINTER_ATTRIBUTE_P2P_TOKENS);
    case CU_POINTER_ATTRIBUTE_CONTEXT:
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_HOST_POINTER:
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: return 8;
    case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
    case CU_POINTER_ATTRIBUTE_SYNC_MEMOPS:
    case CU_POINTER_ATTRIBUTE_IS_MANAGED:
    case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
    case CU_POINTER_ATTRIBUTE_IS_LEGACY_CUDA_IPC_CAPABLE:
    case CU_POINTER_ATTRIBUTE_MAPPED:
    case CU_POINTER_ATTRIBUTE_IS_GPU_DIRECT_RDMA_CAPABLE:
    case CU_POINTER_ATTRIBUTE_ACCESS_FLAGS:
    case CU_POINTER_ATTRIBUTE_IS_HW_DECOMPRESS_CAPABLE: return 4;
  }
  return 0;
}

// The attributes of a page-locked block of the client's: host memory, in
// the current context, with a device address (the same) only when mapped.
void describe_host_block(CUpointer_attribute a, CUdeviceptr ptr, unsigned flags, void* data) {
  const size_t n = value_size(a);
  std::memset(data, 0, n);
  uint64_t value = 0;
  if (a == CU_POINTER_ATTRIBUTE_MEMORY_TYPE) value = CU_MEMORYTYPE_HOST;
  if (a == CU_POINTER_ATTRIBUTE_HOST_POINTER) value = ptr;
  if (a == CU_POINTER_ATTRIBUTE_DEVICE_POINTER && (flags & CU_MEMHOSTALLOC_DEVICEMAP)) value = ptr;
  if (a == CU_POINTER_ATTRIBUTE_CONTEXT) cuCtxGetCurrent(reinterpret_cast<CUcontext*>(&value));
  std::memcpy(data, &value, n < 8 ? n : 8);
}

// An allocation the client placed itself is described as the program asked
// for it, where the driver would describe the mapping, rounded up.
void describe_range(unsigned n, const CUpointer_attribute* attrs, void** data, CUdeviceptr ptr) {
  CUdeviceptr base = 0;
  size_t size = 0;
  if (!mapped_range(ptr, &base, &size)) return;
  for (unsigned i = 0; i < n; ++i) {
    if (!data[i]) continue;
    if (attrs[i] == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR) std::memcpy(data[i], &base, 8);
    if (attrs[i] == CU_POINTER_ATTRIBUTE_RANGE_SIZE) std::memcpy(data[i], &size, 8);
  }
}

}  // namespace

namespace parts {

// The server's answers for allocations the client placed, by (base,
// attribute), with pointer attributes as they are for the base.
struct PointerAttributes {
  RankedMutex mu{LockRank::kLeaf, "PointerAttributes::mu"};
  std::map<std::pair<CUdeviceptr, CUpointer_attribute>, uint64_t> values;
};

}  // namespace parts

namespace {

using parts::PointerAttributes;

PointerAttributes& kept() { return client_state().pointer_attributes.get(); }

// Attributes the program may change while the allocation lives.
bool keepable(CUpointer_attribute a) {
  return a != CU_POINTER_ATTRIBUTE_SYNC_MEMOPS && a != CU_POINTER_ATTRIBUTE_ACCESS_FLAGS &&
         a != CU_POINTER_ATTRIBUTE_P2P_TOKENS;
}

bool moves_with_offset(CUpointer_attribute a) {
  return a == CU_POINTER_ATTRIBUTE_DEVICE_POINTER || a == CU_POINTER_ATTRIBUTE_HOST_POINTER;
}

// Fills every wanted attribute from what was kept for the allocation at
// `base`; false when one is missing.
bool recall(unsigned n, const CUpointer_attribute* attrs, void** data, CUdeviceptr base,
            CUdeviceptr ptr) {
  std::lock_guard lock(kept().mu);
  for (unsigned i = 0; i < n; ++i)
    if (data[i] && (!keepable(attrs[i]) || !kept().values.count({base, attrs[i]}))) return false;
  for (unsigned i = 0; i < n; ++i) {
    if (!data[i]) continue;
    uint64_t value = kept().values.at({base, attrs[i]});
    if (moves_with_offset(attrs[i]) && value) value += ptr - base;
    std::memcpy(data[i], &value, value_size(attrs[i]));
  }
  return true;
}

void keep(unsigned n, const CUpointer_attribute* attrs, void** data, CUdeviceptr base,
          CUdeviceptr ptr) {
  std::lock_guard lock(kept().mu);
  for (unsigned i = 0; i < n; ++i) {
    if (!data[i] || !keepable(attrs[i])) continue;
    uint64_t value = 0;
    std::memcpy(&value, data[i], value_size(attrs[i]));
    if (moves_with_offset(attrs[i]) && value) value -= ptr - base;
    kept().values[{base, attrs[i]}] = value;
  }
}

// Each thread's last allocation answered from what was kept, with those
// answers: asking again about it takes no lock shared between threads.
// g_dropped moves whenever kept answers are dropped, which ends them all.
std::atomic<uint64_t> g_dropped{0};

struct Front {
  CUdeviceptr base = 0;
  size_t size = 0;
  uint64_t dropped = ~uint64_t{0};
  std::vector<std::pair<CUpointer_attribute, uint64_t>> values;
};

Front& front() {
  thread_local Front f;
  return f;
}

const uint64_t* front_value(const Front& f, CUpointer_attribute a) {
  for (const auto& [attr, value] : f.values)
    if (attr == a) return &value;
  return nullptr;
}

bool recall_front(unsigned n, const CUpointer_attribute* attrs, void** data, CUdeviceptr ptr) {
  const Front& f = front();
  if (f.dropped != g_dropped.load(std::memory_order_acquire) || ptr < f.base ||
      ptr - f.base >= f.size)
    return false;
  for (unsigned i = 0; i < n; ++i)
    if (data[i] && !front_value(f, attrs[i])) return false;
  for (unsigned i = 0; i < n; ++i) {
    if (!data[i]) continue;
    uint64_t value = *front_value(f, attrs[i]);
    if (attrs[i] == CU_POINTER_ATTRIBUTE_RANGE_START_ADDR) value = f.base;
    if (attrs[i] == CU_POINTER_ATTRIBUTE_RANGE_SIZE) value = f.size;
    if (moves_with_offset(attrs[i]) && value) value += ptr - f.base;
    std::memcpy(data[i], &value, value_size(attrs[i]));
  }
  return true;
}

// Makes the allocation at `base` this thread's front, with what is kept for
// it; `dropped` is g_dropped as read before the answers were found.
void to_front(CUdeviceptr base, size_t size, uint64_t dropped) {
  Front& f = front();
  f = Front{base, size, dropped, {}};
  std::lock_guard lock(kept().mu);
  for (auto it = kept().values.lower_bound({base, CUpointer_attribute{}});
       it != kept().values.end() && it->first.first == base; ++it)
    f.values.emplace_back(it->first.second, it->second);
}

// The server numbers its own devices; the program, the session's list.
void to_program_device(unsigned n, const CUpointer_attribute* attrs, void** data) {
  if (!several_servers()) return;
  for (unsigned i = 0; i < n; ++i) {
    if (!data[i] || attrs[i] != CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) continue;
    int local = 0;
    std::memcpy(&local, data[i], sizeof local);
    const int dev = global_device(routed_server(), local);
    std::memcpy(data[i], &dev, sizeof dev);
  }
}

CUresult ask_server(unsigned n, const CUpointer_attribute* attrs, void** data, CUdeviceptr ptr) {
  Route route;
  route.address(ptr);
  protocol::op::PointerAttributes::Reply reply;
  const CUresult rc =
      ask<protocol::op::PointerAttributes>({ptr, std::vector(attrs, attrs + n)}, &reply);
  if (rc != CUDA_SUCCESS) return rc;
  if (reply.values.size() != n) return bad_reply("cuPointerGetAttributes");
  for (unsigned i = 0; i < n; ++i)
    if (data[i]) std::memcpy(data[i], reply.values[i].data(), value_size(attrs[i]));
  to_program_device(n, attrs, data);
  describe_range(n, attrs, data, ptr);
  return CUDA_SUCCESS;
}

CUresult get_attributes(unsigned n, CUpointer_attribute* attrs, void** data, CUdeviceptr ptr) {
  if (!connection()) return CUDA_ERROR_NOT_INITIALIZED;
  if (!attrs || !data) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; ++i)
    if (!value_size(attrs[i])) return CUDA_ERROR_INVALID_VALUE;
  if (recall_front(n, attrs, data, ptr)) return CUDA_SUCCESS;
  unsigned flags = 0;
  if (!is_host_block(reinterpret_cast<const void*>(ptr), &flags)) {
    CUdeviceptr base = 0;
    size_t size = 0;
    const uint64_t dropped = g_dropped.load(std::memory_order_acquire);
    if (!mapped_range(ptr, &base, &size)) return ask_server(n, attrs, data, ptr);
    if (recall(n, attrs, data, base, ptr)) {
      describe_range(n, attrs, data, ptr);
      to_front(base, size, dropped);
      return CUDA_SUCCESS;
    }
    const CUresult rc = ask_server(n, attrs, data, ptr);
    if (rc == CUDA_SUCCESS) keep(n, attrs, data, base, ptr);
    return rc;
  }
  for (unsigned i = 0; i < n; ++i)
    if (data[i]) describe_host_block(attrs[i], ptr, flags, data[i]);
  return CUDA_SUCCESS;
}

}  // namespace

void forget_attributes(CUdeviceptr base) {
  std::lock_guard lock(kept().mu);
  g_dropped.fetch_add(1, std::memory_order_acq_rel);
  auto& values = kept().values;
  values.erase(values.lower_bound({base, CUpointer_attribute{}}),
               values.lower_bound({base + 1, CUpointer_attribute{}}));
}

}  // namespace scuda::client

CUresult scuda::client::custom::cuPointerGetAttributes(unsigned int n, CUpointer_attribute* attrs,
                                                       void** data, CUdeviceptr ptr) {
  return scuda::client::get_attributes(n, attrs, data, ptr);
}

CUresult scuda::client::custom::cuPointerGetAttribute(void* data, CUpointer_attribute attr,
                                                      CUdeviceptr ptr) {
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  return scuda::client::get_attributes(1, &attr, &data, ptr);
}
