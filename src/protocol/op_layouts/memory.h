// Address ranges, registered host memory, IPC and shareable handles, pointer
// attributes, and the objects made over memory (textures, surfaces).
// (op_layouts.h says how these are used.)
#pragma once

#include <cuda.h>

#include <array>
#include <cstdint>
#include <optional>
#include <tuple>
#include <vector>

#include "protocol/ipc_handle.h"
#include "protocol/layout.h"
#include "protocol/ops.h"

namespace scuda::protocol::op {

// Device memory of the current context's device, as cuMemGetInfo says.
struct MemoryInfo {
  uint64_t free = 0;
  uint64_t total = 0;
  auto fields() { return std::tie(free, total); }
};

// Addresses of the current device the client places allocations in, at
// `hint` (0: where the driver likes).
struct VaReserve {
  static constexpr Op kOp = kOpVaReserve;
  struct Request {
    uint64_t hint = 0;
    auto fields() { return std::tie(hint); }
  };
  struct Reply {
    uint64_t base = 0;
    uint64_t size = 0;
    uint64_t granularity = 0;
    MemoryInfo memory;
    auto fields() { return std::tie(base, size, granularity, memory.free, memory.total); }
  };
};

// Memory at [address, address + size) of a reservation; answered (with the
// device's memory, also when the map failed) only when the client asks.
struct VaMap {
  static constexpr Op kOp = kOpVaMap;
  struct Request {
    uint64_t address = 0;
    uint64_t size = 0;
    auto fields() { return std::tie(address, size); }
  };
  using Reply = MemoryInfo;
};

// One-way: unmaps what a va-map mapped at `address`, after the context's work.
struct VaFree {
  static constexpr Op kOp = kOpVaFree;
  struct Request {
    uint64_t address = 0;
    auto fields() { return std::tie(address); }
  };
  using Reply = Empty;
};

// One-way: waits for the context's work.
struct VaSync {
  static constexpr Op kOp = kOpVaSync;
  using Request = Empty;
  using Reply = Empty;
};

// A flag of host-register's, beside the driver's: the mirror is live, kept
// in step over the live mirrors' channel while kernels run.
constexpr uint32_t kLiveMirror = 1u << 31;

// A mirror of the client's [address, address + size), registered with the
// driver; the device address it got (the client's own where it could).
struct HostRegister {
  static constexpr Op kOp = kOpHostRegister;
  struct Request {
    uint64_t address = 0;
    uint64_t size = 0;
    uint32_t flags = 0;
    auto fields() { return std::tie(address, size, flags); }
  };
  struct Reply {
    uint64_t device = 0;
    auto fields() { return std::tie(device); }
  };
};

// The mirror registered at `address`, unregistered and freed.
struct HostUnregister {
  static constexpr Op kOp = kOpHostUnregister;
  struct Request {
    uint64_t address = 0;
    auto fields() { return std::tie(address); }
  };
  using Reply = Empty;
};

// A handle's 64 bytes, the driver's or scuda's own (ipc_handle.h).
using IpcBytes = std::array<uint8_t, kIpcHandleBytes>;

// The handle another session opens `address`'s memory with.
struct IpcExportMemory {
  static constexpr Op kOp = kOpIpcExportMemory;
  struct Request {
    uint64_t address = 0;
    auto fields() { return std::tie(address); }
  };
  struct Reply {
    IpcBytes handle{};
    auto fields() { return std::tie(handle); }
  };
};

// Opens a handle: at `at`, which the client chose, for scuda's handles, or
// where the driver likes (at 0) for the driver's; the pointer it got.
struct IpcOpenMemory {
  static constexpr Op kOp = kOpIpcOpenMemory;
  struct Request {
    uint64_t at = 0;
    uint32_t flags = 0;
    IpcBytes handle{};
    auto fields() { return std::tie(at, flags, handle); }
  };
  struct Reply {
    uint64_t address = 0;
    auto fields() { return std::tie(address); }
  };
};

// An allocation handle or a pool's id (`kind`, IpcKind), exported: the bytes
// the client's stand-in descriptor holds.
struct ShareableExport {
  static constexpr Op kOp = kOpShareableExport;
  struct Request {
    uint8_t kind = 0;
    uint64_t handle = 0;
    auto fields() { return std::tie(kind, handle); }
  };
  using Reply = IpcExportMemory::Reply;
};

// A stand-in descriptor's bytes, imported: the allocation handle, or the
// pool's id (bound to `proposed`).
struct ShareableImport {
  static constexpr Op kOp = kOpShareableImport;
  struct Request {
    uint8_t kind = 0;
    IpcBytes handle{};
    uint64_t proposed = 0;
    auto fields() { return std::tie(kind, handle, proposed); }
  };
  struct Reply {
    uint64_t handle = 0;
    auto fields() { return std::tie(handle); }
  };
};

// The attributes of the memory at `address`, each value in
// kPointerValueBytes bytes, zero padded; handles among them (a context, a
// memory pool) as client ids.
struct PointerAttributes {
  static constexpr Op kOp = kOpPointerAttributes;
  using Value = std::array<uint8_t, kPointerValueBytes>;
  struct Request {
    uint64_t address = 0;
    std::vector<CUpointer_attribute> attributes;  // at most kMaxPointerAttributes
    auto fields() { return std::tie(address, attributes); }
  };
  struct Reply {
    std::vector<Value> values;  // one per attribute asked
    auto fields() { return std::tie(values); }
  };
};

// Sparse array mappings (cuMemMapArrayAsync) on `stream`, at most
// kMaxArrayMaps: each entry's array is the client's id, its memory handle
// the server's own value.
struct MemMapArray {
  static constexpr Op kOp = kOpMemMapArray;
  struct Request {
    uint8_t per_thread = 0;
    uint64_t stream = 0;
    std::vector<CUarrayMapInfo> maps;
    auto fields() { return std::tie(per_thread, stream, maps); }
  };
  using Reply = Empty;
};

// A decompression batch (cuMemBatchDecompressAsync) on `stream`, at most
// kMaxDecompressions entries of device addresses. The driver's result and
// the failing entry's index come in the reply, also when the batch failed.
struct MemBatchDecompress {
  static constexpr Op kOp = kOpMemBatchDecompress;
  struct Request {
    uint8_t per_thread = 0;
    uint64_t stream = 0;
    uint32_t flags = 0;
    uint8_t want_index = 0;
    std::vector<CUmemDecompressParams> params;
    auto fields() { return std::tie(per_thread, stream, flags, want_index, params); }
  };
  struct Reply {
    uint32_t result = 0;  // CUresult
    uint64_t index = 0;
    auto fields() { return std::tie(result, index); }
  };
};

// A value the driver made that the client uses as it is (a texture or
// surface object).
struct ObjectValue {
  uint64_t object = 0;
  auto fields() { return std::tie(object); }
};

// A texture object. The resource names an array by the client's id; a
// linear or pitched resource's device pointer passes as it is.
struct TexObjectCreate {
  static constexpr Op kOp = kOpTexObjectCreate;
  struct Request {
    CUDA_RESOURCE_DESC resource{};
    CUDA_TEXTURE_DESC texture{};
    std::optional<CUDA_RESOURCE_VIEW_DESC> view;
    auto fields() { return std::tie(resource, texture, view); }
  };
  using Reply = ObjectValue;
};

// A surface object, its resource as a texture object's.
struct SurfObjectCreate {
  static constexpr Op kOp = kOpSurfObjectCreate;
  struct Request {
    CUDA_RESOURCE_DESC resource{};
    auto fields() { return std::tie(resource); }
  };
  using Reply = ObjectValue;
};

// The resource of a texture or surface object (`owner`, ResourceOwner),
// with arrays named by the client's ids.
struct ResourceDesc {
  static constexpr Op kOp = kOpResourceDesc;
  struct Request {
    uint8_t owner = 0;
    uint64_t object = 0;
    auto fields() { return std::tie(owner, object); }
  };
  struct Reply {
    CUDA_RESOURCE_DESC resource{};
    auto fields() { return std::tie(resource); }
  };
};

}  // namespace scuda::protocol::op
