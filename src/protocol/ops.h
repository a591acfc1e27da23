// Op codes. Hand-written ops live below kFirstGeneratedOp; the generator
// numbers one op per forwarded driver function from there (api_ops.h).
#pragma once

#include <cstdint>

#include "api_ops.h"

namespace scuda::protocol {

enum Op : uint32_t {
  kOpHello = 1,          // handshake; must be the first frame
  kOpCtxSetCurrent,      // one-way: the calling client thread's context
  kOpMemcpyHtoD,         // one chunk of a host-to-device copy
  kOpMemcpyDtoH,         // one chunk of a device-to-host copy
  kOpModuleLoad,         // a module image (cubin, fatbin or PTX)
  kOpLibraryLoad,        // a library image
  kOpModuleGetFunction,  // a function and its parameter layout
  kOpLibraryGetKernel,   // a kernel and its parameter layout
  kOpLaunch,             // cuLaunchKernel / cuLaunchKernelEx
  kFirstGeneratedOp = 1000,
};

}  // namespace scuda::protocol
