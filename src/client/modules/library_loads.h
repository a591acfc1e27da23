// Library loads sent without waiting (library_loads.cc).
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "protocol/ops.h"

namespace scuda::client {

// Loads an image the session is not known to hold as library `id`, without
// waiting for the server.
CUresult load_library_later(const protocol::ImageHash& hash, const void* image, size_t size,
                            uint64_t id);

// With several servers: loads the image as library `id` on every one, so
// that its kernels run on any of their devices, without waiting.
CUresult load_library_everywhere(const protocol::ImageHash& hash, const void* image, size_t size,
                                 uint64_t id);

// Before any request that names library `id`: its load has reached the
// server (the image sent, if the server lacked it). The load's error if it
// failed.
CUresult library_ready(uint64_t id);

}  // namespace scuda::client
