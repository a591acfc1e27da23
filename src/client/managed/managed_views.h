// The two views of the host's copy of managed memory. The program's view
// sits at the managed addresses, protected as coherence needs (PROT_NONE
// while the device may have changed a page); a second, always-writable view
// of the same pages is the client's own, so that a pull lands in pages the
// program cannot read yet, and a window can be pulled ahead of the host's
// reading without showing it half-written.
#pragma once

#include <cstddef>
#include <cstdint>

namespace scuda::client::managed_views {

// Maps [address, address + size) (page-aligned) for the program, PROT_NONE,
// exactly there, and the writable view of the same pages elsewhere; the
// writable view's first byte, or nullptr (logged) when the program's range
// is taken or the memory cannot be had.
uint8_t* map(uintptr_t address, size_t size);
// Unmaps both views of a range map() made.
void unmap(uintptr_t address, uint8_t* writable, size_t size);

}  // namespace scuda::client::managed_views
