// Checks that host<->device copies share.
#pragma once

#include <cuda.h>

#include "common/driver_table.h"

namespace scuda::server {

// A copy on `stream` that is being captured would touch a request's buffer
// when the graph runs, long after the buffer is gone: it is refused, loudly
// (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED).
CUresult refuse_capture(const DriverTable& d, void* stream, bool per_thread);

}  // namespace scuda::server
