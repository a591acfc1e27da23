// Host memory the client registered (cuMemHostRegister), mirrored in the
// session process: anonymous pages at the client's very addresses where they
// are free here, registered with the driver so that kernels read and write
// them. A twin of each mirror holds the bytes the client is known to have,
// so that only what the device changed travels back (docs/managed-memory.md,
// "Registered host memory").
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string_view>

#include <vector>

#include "common/driver_table.h"
#include "common/live_words.h"
#include "protocol/codec.h"

namespace scuda::server {

class HostMirrors {
 public:
  HostMirrors() = default;
  HostMirrors(const HostMirrors&) = delete;
  HostMirrors& operator=(const HostMirrors&) = delete;

  // Mirrors the client's [address, address + size); *device is the device
  // address of `address`. With protocol::op::kLiveMirror in `flags` the
  // mirror is live (common/live_words.h): its words travel over the live
  // mirrors' channel only, so it needs `address` and `size` in whole words.
  CUresult add(const DriverTable& d, uint64_t address, uint64_t size, unsigned flags,
               CUdeviceptr* device);
  CUresult remove(const DriverTable& d, uint64_t address);
  // The client's host changed `bytes` at `address`; false when they do not
  // lie inside one mirror.
  bool write(uint64_t address, std::string_view bytes);
  // Appends the runs of the client's [address, address + size) that the
  // device changed since the client last had them (op::MirrorChanges),
  // and notes that the client has them now. False when the range
  // does not lie inside one mirror.
  // The mirror is kept from then on: take_window_changes includes it.
  bool take_changes(uint64_t address, uint64_t size, protocol::Writer& out);
  // The changes of every kept mirror (every mirror when `all`), in windows
  // of at most kChunkSize bytes of mirror each, handed to `send` one window
  // at a time (windows without changes are skipped); false as soon as
  // `send` fails. A driver thread takes them all as a host callback is
  // reached, so that the client's memory holds what the stream's work wrote
  // before the callback runs.
  bool take_window_changes(bool all, const std::function<bool(protocol::Writer)>& send);
  // The words the device changed in every live mirror, as one snapshot in
  // ascending order (live::take_snapshot).
  void take_live_changes(std::vector<live::Run>* runs);
  // Writes one turn of the client's changed words (ascending) into the live
  // mirrors (live::apply_turn), dropping those of a mirror the client
  // dropped while they travelled; false for a run partly outside a mirror,
  // in one that is not live, or not in whole words.
  bool write_live(const std::vector<live::Run>& runs);

 private:
  struct Mirror {
    uint64_t size;
    uint8_t* host;  // the mirror of the client's first byte
    uint8_t* twin;  // what the client has, as far as the device knows
    void* map;      // the page-aligned mappings that hold them
    void* twin_map;
    size_t map_size;
    bool kept = false;  // pulled by the client: its changes come with synchronizing replies
    bool live = false;  // kept in step over the live mirrors' channel alone
  };
  // The mirror holding the client's [address, address + size), or nullptr;
  // *offset is `address`'s offset in it.
  Mirror* find(uint64_t address, uint64_t size, uint64_t* offset);
  bool overlaps(uint64_t address, uint64_t size) const;

  // The session's thread and the driver's callback thread both use them.
  mutable std::mutex mu_;
  std::map<uint64_t, Mirror> mirrors_;  // by the client's address
};

}  // namespace scuda::server
