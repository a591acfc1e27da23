// Builds the packed parameter buffer of a launch from kernelParams or extra.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <vector>

#include "module_image.h"

namespace scuda_double {

// Padding between parameters is zero. With `extra`, BUFFER_SIZE must equal
// the packed size (end of the last parameter) or that size rounded up to the
// largest parameter alignment (sizeof of the equivalent C struct).
CUresult pack_params(const KernelDesc& kernel, void** params, void** extra,
                     std::vector<uint8_t>* out);

}  // namespace scuda_double
