#include "server/session/handles.h"

#include <cuda.h>

namespace scuda::server {

namespace {

constexpr uint64_t kLegacyStreamId = 1;
constexpr uint64_t kPerThreadStreamId = 2;

bool kind_accepts(HandleKind expected, HandleKind actual) {
  // The driver takes a CUkernel wherever it takes a CUfunction.
  return expected == actual ||
         (expected == HandleKind::CUfunction && actual == HandleKind::CUkernel);
}

}  // namespace

bool HandleTable::resolve(uint64_t id, HandleKind kind, void** real) const {
  if (id == 0) {
    *real = nullptr;
    return true;
  }
  if (kind == HandleKind::CUstream && (id == kLegacyStreamId || id == kPerThreadStreamId)) {
    *real = reinterpret_cast<void*>(static_cast<uintptr_t>(id));
    return true;
  }
  auto it = by_id_.find(id);
  if (it == by_id_.end() || !kind_accepts(kind, it->second.kind)) return false;
  *real = it->second.real;
  return true;
}

bool HandleTable::can_bind(uint64_t proposed) const {
  return proposed > kPerThreadStreamId && !by_id_.count(proposed);
}

uint64_t HandleTable::bind(uint64_t proposed, HandleKind kind, void* real, bool answered) {
  if (!real) return 0;
  if (const uint64_t known = find(real); known && answered) {
    auto it = by_id_.find(known);
    if (it != by_id_.end() && kind_accepts(kind, it->second.kind)) return known;
  }
  by_id_[proposed] = {kind, real, nullptr};
  by_real_[real] = proposed;
  return proposed;
}

void HandleTable::alias(uint64_t id, HandleKind kind, void* real) {
  by_id_[id] = {kind, real, nullptr};
  by_real_.try_emplace(real, id);
}

uint64_t HandleTable::find(void* real) const {
  auto it = by_real_.find(real);
  return it == by_real_.end() ? 0 : it->second;
}

void HandleTable::lend(uint64_t id, std::shared_ptr<const std::string> bytes) {
  auto it = by_id_.find(id);
  if (it != by_id_.end()) it->second.lent = std::move(bytes);
}

void HandleTable::forget(uint64_t id) {
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return;
  if (find(it->second.real) == id) by_real_.erase(it->second.real);
  by_id_.erase(it);
}

}  // namespace scuda::server
