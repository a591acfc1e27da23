// What an IPC handle carries when the memory behind it is memory the client
// placed (docs/protocol.md, "IPC"): the driver's own cuIpcGetMemHandle
// refuses such (VMM) memory, so the exporting session hands out a reference
// to a descriptor it keeps instead, and the importing session fetches that
// descriptor from it over a local socket. The same reference, written into a
// memfd on the client, stands in for the descriptors that
// cuMemExportToShareableHandle and cuMemPoolExportToShareableHandle return.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace scuda::protocol {

// Names one descriptor a session exported; the secret is what lets another
// session fetch it.
struct IpcRef {
  uint32_t pid = 0;  // the exporting session process
  uint64_t id = 0;   // the export, within that session
  std::array<uint8_t, 16> secret{};
};

// What a shared descriptor is of.
enum class IpcKind : uint8_t {
  kMemory = 1,      // device memory the client placed (cuIpcGetMemHandle)
  kAllocation = 2,  // a generic allocation handle (cuMemExportToShareableHandle)
  kPool = 3,        // a memory pool (cuMemPoolExportToShareableHandle)
};

// The bytes of a CUipcMemHandle or of a stand-in descriptor's contents.
constexpr size_t kIpcHandleBytes = 64;

struct IpcHandle {
  IpcKind kind = IpcKind::kMemory;
  IpcRef ref;
  uint64_t offset = 0;  // kMemory: of the exported address in the mapping
  uint64_t size = 0;    // kMemory, kAllocation: bytes of memory behind it
};

// Writes `h` into `out` (kIpcHandleBytes), marked as scuda's.
void encode_ipc_handle(const IpcHandle& h, uint8_t* out);
// Reads `in` (kIpcHandleBytes) back; nothing when the bytes are not one of
// scuda's handles (a driver's own IPC handle, or garbage).
std::optional<IpcHandle> decode_ipc_handle(const uint8_t* in);

}  // namespace scuda::protocol
