// A diagnostic for pass-through mode: SCUDA_SPY_EXPORT_TABLES=1 hands callers
// a copy of the real driver's export table whose every slot logs its
// arguments, result and the words its pointer arguments point to, after
// calling the real slot. This shows what NVIDIA's driver answers where the
// stand-in has to answer on its own. SCUDA_SPY_DUMP=1734dc26,... also dumps
// the named tables' arguments before and after each call.
#pragma once

#include <cuda.h>

// A spy slot calls the real slot through one catch-all type, whatever its
// own: clang's UBSan (the sanitized tests) would flag each such call.
#if defined(__clang__)
#define SCUDA_NO_FUNCTION_CHECK __attribute__((no_sanitize("function")))
#else
#define SCUDA_NO_FUNCTION_CHECK
#endif

namespace scuda::client {

bool spying_on_export_tables();

// A logging copy of `real` (the table the driver returned for `id`), or
// `real` itself for tables whose addresses the integrity check hashes.
const void* spy_export_table(const CUuuid& id, const void* real);

}  // namespace scuda::client
