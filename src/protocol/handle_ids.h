// Handles (CUstream, nvmlDevice_t, ...) cross the wire as the 64-bit ids the
// server names its objects by: the client hands the program an id as the
// handle, so a handle and its id convert both ways without a table.
#pragma once

#include <cstdint>

namespace scuda::protocol {

// The id a handle stands for.
template <class H>
uint64_t handle_id(H h) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(h));
}

// The handle that stands for `id`.
template <class H>
H handle_from_id(uint64_t id) {
  return reinterpret_cast<H>(static_cast<uintptr_t>(id));
}

}  // namespace scuda::protocol
