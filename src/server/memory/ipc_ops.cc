// IPC between sessions of one server (docs/protocol.md, "IPC"). Memory the
// client placed is VMM memory, which the driver's cuIpcGetMemHandle refuses:
// the session exports it as a POSIX descriptor instead (IpcExports) and
// hands out a scuda handle naming it; the importing session fetches the
// descriptor and maps it at the address its own client chose. Other device
// memory keeps the driver's own IPC handles, which work between processes
// of one machine as they are. Allocation handles and pools share the same
// way, their descriptors standing behind memfds on the clients.
#include <spdlog/spdlog.h>

#include <cstring>

#include "protocol/ipc_handle.h"
#include "protocol/ops.h"
#include "server/memory/va_map.h"
#include "server/session/dispatch.h"
#include "server/session/session.h"
#include "server/session/typed_handler.h"

namespace scuda::server {

namespace {

namespace op = protocol::op;
using protocol::IpcHandle;
using protocol::IpcKind;
using protocol::kIpcHandleBytes;

constexpr auto kFd = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;

// Keeps the descriptor the driver gave (rc its result) among the session's
// exports; *ref names it.
CUresult keep_export(Session& s, CUresult rc, int fd, uint64_t size, uint64_t key,
                     protocol::IpcRef* ref) {
  if (rc != CUDA_SUCCESS) return rc;
  std::string error;
  if (!s.ipc().add(Socket(fd), size, key, ref, &error)) {
    spdlog::error("cannot share device memory with other sessions: {}", error);
    return CUDA_ERROR_OPERATING_SYSTEM;
  }
  return CUDA_SUCCESS;
}

// The mapping at [base, base + size) as a descriptor other sessions fetch.
CUresult export_mapping(Session& s, uint64_t base, uint64_t size, protocol::IpcRef* ref) {
  const DriverTable& d = s.driver();
  if (!d.cuMemRetainAllocationHandle || !d.cuMemExportToShareableHandle || !d.cuMemRelease)
    return CUDA_ERROR_NOT_SUPPORTED;
  CUmemGenericAllocationHandle memory = 0;
  CUresult rc = d.cuMemRetainAllocationHandle(&memory, reinterpret_cast<void*>(base));
  if (rc != CUDA_SUCCESS) return rc;
  int fd = -1;
  rc = d.cuMemExportToShareableHandle(&fd, memory, kFd, 0);
  d.cuMemRelease(memory);
  return keep_export(s, rc, fd, size, base, ref);
}

CUresult ipc_export_memory(Session& s, const op::IpcExportMemory::Request& q,
                           op::IpcExportMemory::Reply* a) {
  const uint64_t address = q.address;
  uint8_t* bytes = a->handle.data();
  uint64_t base = 0, size = 0;
  if (s.va().mapping_holding(address, &base, &size)) {
    IpcHandle h;
    h.offset = address - base;
    h.size = size;
    if (CUresult rc = export_mapping(s, base, size, &h.ref); rc != CUDA_SUCCESS) return rc;
    protocol::encode_ipc_handle(h, bytes);
  } else {
    if (!s.driver().cuIpcGetMemHandle) return CUDA_ERROR_NOT_SUPPORTED;
    CUipcMemHandle native;
    static_assert(sizeof native == kIpcHandleBytes);
    if (CUresult rc = s.driver().cuIpcGetMemHandle(&native, address); rc != CUDA_SUCCESS) return rc;
    std::memcpy(bytes, &native, sizeof native);
  }
  return CUDA_SUCCESS;
}

// The descriptor `h` names, from the session that exported it, and the
// size it was exported with: CUDA_ERROR_INVALID_HANDLE, with the reason in
// the log, when it cannot be had.
CUresult fetch(const IpcHandle& h, Socket* fd, uint64_t* size) {
  std::string error;
  *fd = fetch_export(h.ref, size, &error);
  if (fd->valid()) return CUDA_SUCCESS;
  spdlog::warn("a shared descriptor could not be fetched: {}", error);
  return CUDA_ERROR_INVALID_HANDLE;
}

void* os_handle(const Socket& fd) {
  return reinterpret_cast<void*>(static_cast<intptr_t>(fd.fd()));
}

// The descriptor `h` names, imported as an allocation handle.
CUresult import_allocation(Session& s, const IpcHandle& h, CUmemGenericAllocationHandle* memory,
                           uint64_t* size) {
  const DriverTable& d = s.driver();
  if (!d.cuMemImportFromShareableHandle) return CUDA_ERROR_NOT_SUPPORTED;
  Socket fd;
  if (CUresult rc = fetch(h, &fd, size); rc != CUDA_SUCCESS) return rc;
  return d.cuMemImportFromShareableHandle(memory, os_handle(fd), kFd);
}

CUresult open_placed(Session& s, const IpcHandle& h, uint64_t at, uint64_t* opened) {
  if (h.kind != IpcKind::kMemory || h.offset >= h.size || !s.va().can_map(at, h.size))
    return CUDA_ERROR_INVALID_VALUE;
  CUdevice dev = 0;
  if (CUresult rc = s.driver().cuCtxGetDevice(&dev); rc != CUDA_SUCCESS) return rc;
  CUmemGenericAllocationHandle memory = 0;
  uint64_t size = 0;
  if (CUresult rc = import_allocation(s, h, &memory, &size); rc != CUDA_SUCCESS) return rc;
  const CUresult rc = size == h.size ? map_at(s, dev, at, size, memory) : CUDA_ERROR_INVALID_VALUE;
  s.driver().cuMemRelease(memory);
  if (rc == CUDA_SUCCESS) *opened = at + h.offset;
  return rc;
}

CUresult ipc_open_memory(Session& s, const op::IpcOpenMemory::Request& q,
                         op::IpcOpenMemory::Reply* a) {
  const uint8_t* bytes = q.handle.data();
  if (auto h = protocol::decode_ipc_handle(bytes)) return open_placed(s, *h, q.at, &a->address);
  if (!s.driver().cuIpcOpenMemHandle_v2) return CUDA_ERROR_NOT_SUPPORTED;
  CUipcMemHandle native;
  std::memcpy(&native, bytes, sizeof native);
  CUdeviceptr p = 0;
  const CUresult rc = s.driver().cuIpcOpenMemHandle_v2(&p, native, q.flags);
  a->address = p;
  return rc;
}

CUresult export_pool(Session& s, uint64_t id, IpcHandle* h) {
  const DriverTable& d = s.driver();
  void* pool = nullptr;
  if (!s.handles().resolve(id, HandleKind::CUmemoryPool, &pool)) return CUDA_ERROR_INVALID_HANDLE;
  if (!d.cuMemPoolExportToShareableHandle) return CUDA_ERROR_NOT_SUPPORTED;
  int fd = -1;
  const CUresult rc =
      d.cuMemPoolExportToShareableHandle(&fd, static_cast<CUmemoryPool>(pool), kFd, 0);
  return keep_export(s, rc, fd, 0, 0, &h->ref);
}

CUresult export_allocation(Session& s, uint64_t memory, IpcHandle* h) {
  const DriverTable& d = s.driver();
  if (!d.cuMemExportToShareableHandle) return CUDA_ERROR_NOT_SUPPORTED;
  int fd = -1;
  const CUresult rc = d.cuMemExportToShareableHandle(&fd, memory, kFd, 0);
  return keep_export(s, rc, fd, 0, 0, &h->ref);
}

CUresult shareable_export(Session& s, const op::ShareableExport::Request& q,
                          op::ShareableExport::Reply* a) {
  const uint64_t handle = q.handle;
  IpcHandle h;
  h.kind = static_cast<IpcKind>(q.kind);
  CUresult rc = CUDA_ERROR_INVALID_VALUE;
  if (h.kind == IpcKind::kPool) rc = export_pool(s, handle, &h);
  if (h.kind == IpcKind::kAllocation) rc = export_allocation(s, handle, &h);
  if (rc != CUDA_SUCCESS) return rc;
  protocol::encode_ipc_handle(h, a->handle.data());
  return CUDA_SUCCESS;
}

CUresult import_pool(Session& s, const IpcHandle& h, uint64_t proposed, uint64_t* id) {
  const DriverTable& d = s.driver();
  if (!d.cuMemPoolImportFromShareableHandle) return CUDA_ERROR_NOT_SUPPORTED;
  if (!s.handles().can_bind(proposed)) return CUDA_ERROR_INVALID_VALUE;
  Socket fd;
  uint64_t size = 0;
  if (CUresult rc = fetch(h, &fd, &size); rc != CUDA_SUCCESS) return rc;
  CUmemoryPool pool = nullptr;
  const CUresult rc = d.cuMemPoolImportFromShareableHandle(&pool, os_handle(fd), kFd, 0);
  if (rc == CUDA_SUCCESS) *id = s.handles().bind(proposed, HandleKind::CUmemoryPool, pool);
  return rc;
}

CUresult shareable_import(Session& s, const op::ShareableImport::Request& q,
                          op::ShareableImport::Reply* a) {
  const auto h = protocol::decode_ipc_handle(q.handle.data());
  if (!h || static_cast<uint8_t>(h->kind) != q.kind) return CUDA_ERROR_INVALID_VALUE;
  if (h->kind == IpcKind::kPool) return import_pool(s, *h, q.proposed, &a->handle);
  if (h->kind != IpcKind::kAllocation) return CUDA_ERROR_INVALID_VALUE;
  CUmemGenericAllocationHandle memory = 0;
  uint64_t size = 0;
  const CUresult rc = import_allocation(s, *h, &memory, &size);
  a->handle = memory;
  return rc;
}

const HandlerEntry kHandlers[] = {
    typed_entry<op::IpcExportMemory, ipc_export_memory>(),
    typed_entry<op::IpcOpenMemory, ipc_open_memory>(),
    typed_entry<op::ShareableExport, shareable_export>(),
    typed_entry<op::ShareableImport, shareable_import>(),
};

}  // namespace

std::span<const HandlerEntry> ipc_handlers() { return kHandlers; }

}  // namespace scuda::server
