// Launch attributes as they cross: plain values, except the two that name an
// event, whose handles are the client's ids on the wire.
#pragma once

#include <cuda.h>

namespace scuda::server {

class Session;

// Where an attribute is used: a launch cannot take the attribute that makes a
// kernel node updatable from the device; a kernel node can.
enum class AttributeUse { kLaunch, kKernelNode };

// Resolves the event an attribute names from the client's id to the
// driver's handle: CUDA_ERROR_INVALID_HANDLE for an id the session does not
// know as an event.
CUresult translate_attribute(Session& s, CUlaunchAttribute* a, AttributeUse use);
// The reverse, for an attribute read back from the driver: the event it
// names becomes the client's id (0 for an event the session never named).
void name_attribute_handles(Session& s, CUlaunchAttribute* a);

}  // namespace scuda::server
