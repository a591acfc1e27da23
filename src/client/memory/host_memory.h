// The client's page-locked host memory (host_memory.cc).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

namespace scuda::client {

// True when `p` lies inside a block from cuMemHostAlloc / cuMemAllocHost;
// then *flags (if given) are the block's.
bool is_host_block(const void* p, unsigned* flags = nullptr);

// The address device work should use for `p`. Under UVA every page-locked
// block is device memory at its host address; a block the client keeps on
// its side is mirrored in the session (registered_memory.h) the first time
// device work names it, and `p` inside it becomes the mirror's address.
// Any other address is returned as it is. A registered range `p` lies in is
// kept in step with its mirror from then on (registered_memory.h).
CUdeviceptr device_view(CUdeviceptr p);

// Mirrors each page-locked block that a pointer-sized word of the packed
// kernel arguments [args, args + size) points into, and keeps each
// registered range one points into in step with its mirror, so that the
// kernel reaches them; a word pointing into a mirror the session had to
// place at another address is rewritten to the mirror's address. Words are
// read at every 8-byte offset.
void mirror_argument_pointers(uint8_t* args, size_t size);

}  // namespace scuda::client
