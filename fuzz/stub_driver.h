// A driver for the harnesses that serve requests: every entry point answers
// at once without reading or writing through its arguments, so a request's
// fuzzed addresses and sizes never reach memory in the driver; outputs keep
// the values the caller set before the call.
#pragma once

#include <cuda.h>

#include "common/driver_table.h"

namespace scuda::fuzz {

// A table whose every entry point returns `answer`.
DriverTable stub_driver(CUresult answer);

}  // namespace scuda::fuzz
