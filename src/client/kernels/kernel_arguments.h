// Kernel arguments, packed on the client in the kernel's parameter layout,
// so the server receives one buffer whatever form the caller used. Shared by
// launches and graph kernel nodes.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "protocol/codec.h"

namespace scuda::client {

// Appends to `w`, as a blob, `params` (one pointer per parameter) or `extra`
// (a CU_LAUNCH_PARAM_BUFFER_POINTER list) packed for the function or kernel
// whose client id is `fn_id`.
CUresult pack_arguments(uint64_t fn_id, void** params, void** extra, protocol::Writer& w);

}  // namespace scuda::client
