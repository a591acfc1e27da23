// Contexts as the client sees them: each thread's context stack is kept
// here, and the server is told the current one only when a request needs it.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace scuda::client {

// cuCtxGetDevice's answer: `ctx`'s device, or without `ctx` the current
// context's; CUDA_ERROR_INVALID_CONTEXT when it names none of the client's.
CUresult context_device(CUdevice* device, CUcontext ctx);

// The calling thread's current context id; 0 when none.
uint64_t current_context_id();
// The device of the calling thread's current context: false when there is none.
bool current_device(CUdevice* dev);
// A reset primary context has its limits back at their defaults
// (context_limits.cc).
void forget_limits(uint64_t ctx_id);

// The device's primary context, without retaining it (the driver's private
// table hands it out this way).
CUcontext primary_context(CUdevice dev);

// True when `dev` names one of the server's devices.
bool valid_device(CUdevice dev);

}  // namespace scuda::client
