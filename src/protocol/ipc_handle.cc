#include "protocol/ipc_handle.h"

#include <cstring>

#include "protocol/codec.h"

namespace scuda::protocol {

namespace {

// "SCUDAIPC" little-endian, then a version: a driver handle starting with
// these 12 bytes by chance is not a concern worth more bytes.
constexpr uint64_t kMagic = 0x4350494144554353ull;
constexpr uint32_t kVersion = 1;

bool known_kind(uint8_t k) {
  return k == static_cast<uint8_t>(IpcKind::kMemory) ||
         k == static_cast<uint8_t>(IpcKind::kAllocation) ||
         k == static_cast<uint8_t>(IpcKind::kPool);
}

}  // namespace

void encode_ipc_handle(const IpcHandle& h, uint8_t* out) {
  Writer w;
  w.u64(kMagic);
  w.u32(kVersion);
  w.u8(static_cast<uint8_t>(h.kind));
  w.u32(h.ref.pid);
  w.u64(h.ref.id);
  w.bytes(h.ref.secret.data(), h.ref.secret.size());
  w.u64(h.offset);
  w.u64(h.size);
  static_assert(8 + 4 + 1 + 4 + 8 + 16 + 8 + 8 <= kIpcHandleBytes);
  std::memset(out, 0, kIpcHandleBytes);
  std::memcpy(out, w.data().data(), w.size());
}

std::optional<IpcHandle> decode_ipc_handle(const uint8_t* in) {
  Reader r(in, kIpcHandleBytes);
  if (r.u64() != kMagic || r.u32() != kVersion) return std::nullopt;
  const uint8_t kind = r.u8();
  if (!known_kind(kind)) return std::nullopt;
  IpcHandle h;
  h.kind = static_cast<IpcKind>(kind);
  h.ref.pid = r.u32();
  h.ref.id = r.u64();
  if (const uint8_t* s = r.take(h.ref.secret.size()))
    std::memcpy(h.ref.secret.data(), s, h.ref.secret.size());
  h.offset = r.u64();
  h.size = r.u64();
  if (!r.ok() || h.ref.pid == 0) return std::nullopt;
  return h;
}

}  // namespace scuda::protocol
