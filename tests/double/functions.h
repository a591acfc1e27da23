// Lookups shared by the module, library and launch entry points.
// Callers hold the state lock.
#pragma once

#include <cuda.h>

#include "module_image.h"

namespace scuda_double {

// Accepts a CUfunction or, as the real driver does, a CUkernel cast to one.
const KernelDesc* resolve_function(CUfunction fn);

CUresult param_info(const KernelDesc* kernel, size_t index, size_t* offset, size_t* size);

}  // namespace scuda_double
