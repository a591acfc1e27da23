// Copies whose bytes cross the lanes (lanes.h) while their request keeps its
// place on the connection: used by copies and by managed memory's large
// pushes and pulls.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>

#include "client/transport/connection.h"

namespace scuda::client {

// With the connection's lock held: copies `size` bytes between `host` and
// `device` over `lanes` lanes (`op` is kOpMemcpyHtoDLanes or
// kOpMemcpyDtoHLanes); `wait`: the reply is awaited, else the request is
// one-way. `mode` holds kCopyAsync, kCopyPerThread or (one-way, to the
// device) kCopySettled.
CUresult over_lanes(Connection& conn, uint32_t op, CUdeviceptr device, void* host, size_t size,
                    CUstream stream, uint8_t mode, uint32_t lanes, bool wait);

}  // namespace scuda::client
