// A run of managed pages read ahead of the host's faults (coherent_pages.cc):
// the device's bytes land in a mapping of their own while the host reads the
// run before, and mremap moves the pages into place when the host reaches
// them, so that the host's reading overlaps the link with no extra copy and
// no moment at which the host could see the pages half filled.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "client/connection.h"

namespace scuda::client {

class StagedRun {
 public:
  StagedRun() = default;
  ~StagedRun();
  StagedRun(const StagedRun&) = delete;
  StagedRun& operator=(const StagedRun&) = delete;

  // With the connection's lock held: reads the device's copy of
  // [address, address + size) (inside one allocation) into a fresh mapping;
  // false (and nothing staged) when it failed.
  bool fill(Connection& conn, uintptr_t address, size_t size);
  // Moves the staged pages over [address(), address() + size()) with `prot`
  // and stages nothing after; false (nothing moved, nothing staged) when the
  // kernel refused.
  bool place(int prot);
  // Forgets what is staged (keeping memory to stage into next).
  void drop();

  bool empty() const { return staging_ == nullptr; }
  uintptr_t address() const { return address_; }
  size_t size() const { return size_; }

 private:
  void* staging_for(uintptr_t address, size_t size);
  void keep_replaced();

  void* staging_ = nullptr;
  uintptr_t address_ = 0;
  size_t size_ = 0;
  // Pages that placed runs replaced, to stage into next, up to kMostSpare
  // bytes in all.
  struct Spare {
    void* at;
    size_t size;
  };
  static constexpr size_t kMostSpare = 64u << 20;
  std::vector<Spare> spares_;
  size_t spare_bytes_ = 0;
};

}  // namespace scuda::client
