#include "client/staged_runs.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "client/page_transfers.h"

namespace scuda::client {

namespace {

constexpr size_t kHugePage = 2u << 20;

// An address range of `size` bytes, mapped with `prot`, at the same offset
// modulo a huge page as `address`, so that huge pages move between the two
// whole.
void* map_like(uintptr_t address, size_t size, int prot) {
  const size_t span = size + kHugePage;
  void* raw = mmap(nullptr, span, prot, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (raw == MAP_FAILED) return nullptr;
  const auto begin = reinterpret_cast<uintptr_t>(raw);
  uintptr_t at = (begin & ~(kHugePage - 1)) + (address & (kHugePage - 1));
  if (at < begin) at += kHugePage;
  if (at > begin) munmap(raw, at - begin);
  if (begin + span > at + size) munmap(reinterpret_cast<void*>(at + size), begin + span - at - size);
  return reinterpret_cast<void*>(at);
}

void unmap(void*& p, size_t size) {
  if (p) munmap(p, size);
  p = nullptr;
}

}  // namespace

// Staging memory: the pages that placed runs replaced, moved together
// (page tables only), then fresh pages for the rest. Reusing them spares
// the kernel zeroing fresh pages for every run, which costs about as much
// as the copy.
void* StagedRun::staging_for(uintptr_t address, size_t size) {
  void* staging = map_like(address, size, PROT_READ | PROT_WRITE);
  if (!staging) return nullptr;
  auto* at = static_cast<uint8_t*>(staging);
  size_t filled = 0;
  while (!spares_.empty() && filled < size) {
    Spare& spare = spares_.back();
    const size_t n = std::min(spare.size, size - filled);
    if (mremap(spare.at, n, n, MREMAP_MAYMOVE | MREMAP_FIXED, at + filled) != at + filled) break;
    spare.at = static_cast<uint8_t*>(spare.at) + n;
    spare.size -= n;
    spare_bytes_ -= n;
    if (spare.size == 0) spares_.pop_back();
    filled += n;
  }
  if (filled) mprotect(staging, filled, PROT_READ | PROT_WRITE);
  if (filled < size) madvise(at + filled, size - filled, MADV_HUGEPAGE);
  return staging;
}

bool StagedRun::fill(Connection& conn, uintptr_t address, size_t size) {
  drop();
  void* staging = staging_for(address, size);
  if (!staging) return false;
  if (!page_transfers::pull_to(conn, {address, size}, staging)) {
    munmap(staging, size);
    return false;
  }
  staging_ = staging;
  address_ = address;
  size_ = size;
  return true;
}

// The pages at address_ move out first (MREMAP_DONTUNMAP leaves the range
// mapped and empty, so that no access meets a hole) and become the next
// staging memory; where the kernel cannot, they are freed by the move in.
void StagedRun::keep_replaced() {
  if (spare_bytes_ + size_ > kMostSpare) return;
  void* spot = map_like(address_, size_, PROT_NONE);
  if (!spot) return;
  if (mremap(reinterpret_cast<void*>(address_), size_, size_,
             MREMAP_MAYMOVE | MREMAP_FIXED | MREMAP_DONTUNMAP, spot) != spot) {
    munmap(spot, size_);
    return;
  }
  spares_.push_back({spot, size_});
  spare_bytes_ += size_;
}

bool StagedRun::place(int prot) {
  void* want = reinterpret_cast<void*>(address_);
  if (mprotect(staging_, size_, prot) != 0) {
    drop();
    return false;
  }
  keep_replaced();
  if (mremap(staging_, size_, size_, MREMAP_MAYMOVE | MREMAP_FIXED, want) != want) {
    spdlog::debug("managed memory: moving {} staged bytes to {:#x} failed: {}", size_, address_,
                  std::strerror(errno));
    drop();
    return false;
  }
  staging_ = nullptr;
  return true;
}

void StagedRun::drop() { unmap(staging_, size_); }

StagedRun::~StagedRun() {
  drop();
  for (Spare& spare : spares_) munmap(spare.at, spare.size);
}

}  // namespace scuda::client
