// IPC between processes of this machine (docs/protocol.md, "IPC"). Each
// process has its own session on the server; the sessions share memory
// there. Handles are made by the exporting session and travel as they are:
// an IPC handle's 64 bytes, or, for cuMemExportToShareableHandle and the
// pool export, a memfd holding them, so that the program can pass it to
// another process over a unix socket as it would the driver's descriptor.
#include <cuda.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#include <spdlog/spdlog.h>

#include "client/memory/memory.h"
#include "client/op_calls.h"
#include "client/runtime.h"
#include "client/state.h"
#include "common/lock_order.h"
#include "custom.h"
#include "forward.h"
#include "protocol/ipc_handle.h"
#include "protocol/ops.h"

namespace scuda::client {

namespace {

namespace op = protocol::op;
using protocol::IpcKind;
using protocol::kIpcHandleBytes;

}  // namespace

namespace parts {

// What cuIpcOpenMemHandle mapped at addresses this client chose: the
// pointer it returned -> the mapping's base.
struct OpenedIpcMemory {
  RankedMutex mu{LockRank::kRoundTrip, "OpenedIpcMemory::mu"};
  std::map<CUdeviceptr, CUdeviceptr> bases;
};

}  // namespace parts

namespace {

parts::OpenedIpcMemory& opened() { return client_state().opened_ipc_memory.get(); }

// Asks the session to open the handle: at `at` for scuda's handles, or
// where the driver chooses (at 0) for the driver's; *p is the pointer.
CUresult ask_open(uint64_t at, const uint8_t* bytes, unsigned flags, uint64_t* p) {
  op::IpcOpenMemory::Request request{at, flags, {}};
  std::memcpy(request.handle.data(), bytes, kIpcHandleBytes);
  op::IpcOpenMemory::Reply reply;
  const CUresult rc = ask<op::IpcOpenMemory>(request, &reply);
  *p = reply.address;
  return rc;
}

// Maps the memory `h` names at an address of our own.
CUresult open_placed(const protocol::IpcHandle& h, const uint8_t* bytes, unsigned flags,
                     CUdeviceptr* dptr) {
  auto open = [&](uint64_t at) {
    uint64_t p = 0;
    const CUresult rc = ask_open(at, bytes, flags, &p);
    if (rc == CUDA_SUCCESS && p != at + h.offset) return bad_reply("cuIpcOpenMemHandle");
    return rc;
  };
  uint64_t at = 0;
  CUresult rc = CUDA_SUCCESS;
  if (!map_imported(h.size, open, &at, &rc)) {
    spdlog::error(
        "cuIpcOpenMemHandle: this process does not place its own device memory "
        "(SCUDA_VMM=0, or a server with several GPUs), which opening another "
        "process's memory needs");
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (rc != CUDA_SUCCESS) return rc;
  *dptr = at + h.offset;
  note_allocation(at, h.size);
  std::lock_guard lock(opened().mu);
  opened().bases[*dptr] = at;
  return CUDA_SUCCESS;
}

// A memfd holding the handle's bytes, standing in for the session's
// descriptor. Not close-on-exec, as the driver's descriptor is not.
CUresult stand_in(const uint8_t* bytes, int* fd) {
  const int memfd = memfd_create("scuda-shareable-handle", 0);
  if (memfd < 0 || pwrite(memfd, bytes, kIpcHandleBytes, 0) != kIpcHandleBytes) {
    spdlog::error("cannot make a descriptor for a shareable handle: {}", std::strerror(errno));
    if (memfd >= 0) close(memfd);
    return CUDA_ERROR_OPERATING_SYSTEM;
  }
  *fd = memfd;
  return CUDA_SUCCESS;
}

// Only POSIX descriptors can stand for a session's descriptor here.
bool posix_fd(CUmemAllocationHandleType type, const char* name) {
  if (type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return true;
  spdlog::error(
      "{}: handle type {} cannot cross to this machine; scuda shares memory between "
      "processes through POSIX file descriptors (CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)",
      name, static_cast<int>(type));
  return false;
}

CUresult export_to_fd(IpcKind kind, uint64_t handle, void* out, CUmemAllocationHandleType type,
                      unsigned long long flags, const char* name) {
  if (out == nullptr || flags != 0 || !posix_fd(type, name)) return CUDA_ERROR_INVALID_VALUE;
  op::ShareableExport::Reply reply;
  if (const CUresult rc = ask<op::ShareableExport>({static_cast<uint8_t>(kind), handle}, &reply);
      rc != CUDA_SUCCESS)
    return rc;
  return stand_in(reply.handle.data(), static_cast<int*>(out));
}

// Reads the stand-in a program passed back in; *result is the allocation
// handle or the pool's id the server answers.
CUresult import_from_fd(IpcKind kind, void* os_handle, uint64_t proposed, uint64_t* result,
                        const char* name) {
  const int fd = static_cast<int>(reinterpret_cast<intptr_t>(os_handle));
  uint8_t bytes[kIpcHandleBytes];
  const auto h = pread(fd, bytes, sizeof bytes, 0) == kIpcHandleBytes
                     ? protocol::decode_ipc_handle(bytes)
                     : std::nullopt;
  if (!h || h->kind != kind) {
    spdlog::error("{}: descriptor {} is not one that scuda's export gave out", name, fd);
    return CUDA_ERROR_INVALID_VALUE;
  }
  op::ShareableImport::Request request{static_cast<uint8_t>(kind), {}, proposed};
  std::memcpy(request.handle.data(), bytes, sizeof bytes);
  op::ShareableImport::Reply reply;
  const CUresult rc = ask<op::ShareableImport>(request, &reply);
  *result = reply.handle;
  return rc;
}

}  // namespace

}  // namespace scuda::client

using scuda::client::IpcKind;

CUresult scuda::client::custom::cuIpcGetMemHandle(CUipcMemHandle* handle, CUdeviceptr dptr) {
  if (handle == nullptr) return CUDA_ERROR_INVALID_VALUE;
  using IpcExportMemory = scuda::protocol::op::IpcExportMemory;
  IpcExportMemory::Reply reply;
  const CUresult rc = scuda::client::ask<IpcExportMemory>({dptr}, &reply);
  if (rc != CUDA_SUCCESS) return rc;
  static_assert(sizeof *handle == sizeof reply.handle);
  std::memcpy(handle, reply.handle.data(), sizeof *handle);
  return CUDA_SUCCESS;
}

CUresult scuda::client::custom::cuIpcOpenMemHandle_v2(CUdeviceptr* dptr, CUipcMemHandle handle,
                                                      unsigned flags) {
  if (dptr == nullptr) return CUDA_ERROR_INVALID_VALUE;
  uint8_t bytes[sizeof handle];
  std::memcpy(bytes, &handle, sizeof bytes);
  if (const auto h = scuda::protocol::decode_ipc_handle(bytes))
    return scuda::client::open_placed(*h, bytes, flags, dptr);
  uint64_t p = 0;
  const CUresult rc = scuda::client::ask_open(0, bytes, flags, &p);
  if (rc == CUDA_SUCCESS) *dptr = p;
  return rc;
}

CUresult scuda::client::custom::cuIpcCloseMemHandle(CUdeviceptr dptr) {
  auto& o = scuda::client::opened();
  CUdeviceptr base = 0;
  {
    std::lock_guard lock(o.mu);
    auto it = o.bases.find(dptr);
    if (it == o.bases.end()) return scuda::client::forward::cuIpcCloseMemHandle(dptr);
    base = it->second;
    o.bases.erase(it);
  }
  scuda::client::forget_allocation(base);
  return scuda::client::unmap_imported(base);
}

CUresult scuda::client::custom::cuMemExportToShareableHandle(void* shareable,
                                                             CUmemGenericAllocationHandle handle,
                                                             CUmemAllocationHandleType type,
                                                             unsigned long long flags) {
  return scuda::client::export_to_fd(IpcKind::kAllocation, handle, shareable, type, flags,
                                     "cuMemExportToShareableHandle");
}

CUresult scuda::client::custom::cuMemImportFromShareableHandle(CUmemGenericAllocationHandle* handle,
                                                               void* os_handle,
                                                               CUmemAllocationHandleType type) {
  constexpr const char* kName = "cuMemImportFromShareableHandle";
  if (handle == nullptr || !scuda::client::posix_fd(type, kName)) return CUDA_ERROR_INVALID_VALUE;
  uint64_t result = 0;
  const CUresult rc =
      scuda::client::import_from_fd(IpcKind::kAllocation, os_handle, 0, &result, kName);
  if (rc == CUDA_SUCCESS) *handle = result;
  return rc;
}

CUresult scuda::client::custom::cuMemPoolExportToShareableHandle(void* shareable, CUmemoryPool pool,
                                                                 CUmemAllocationHandleType type,
                                                                 unsigned long long flags) {
  return scuda::client::export_to_fd(IpcKind::kPool, scuda::client::handle_id(pool), shareable,
                                     type, flags, "cuMemPoolExportToShareableHandle");
}

CUresult scuda::client::custom::cuMemPoolImportFromShareableHandle(CUmemoryPool* pool,
                                                                   void* os_handle,
                                                                   CUmemAllocationHandleType type,
                                                                   unsigned long long flags) {
  constexpr const char* kName = "cuMemPoolImportFromShareableHandle";
  if (pool == nullptr || flags != 0 || !scuda::client::posix_fd(type, kName))
    return CUDA_ERROR_INVALID_VALUE;
  uint64_t id = 0;
  const CUresult rc = scuda::client::import_from_fd(IpcKind::kPool, os_handle,
                                                    scuda::client::new_handle_id(), &id, kName);
  if (rc == CUDA_SUCCESS) *pool = scuda::client::handle_from_id<CUmemoryPool>(id);
  return rc;
}
