// The bytes of hand-written ops, each described once (layout.h): the
// client writes a Request and reads a Reply with them, the server reads the
// Request and writes the Reply with them, and the tests build their frames
// from them. The op's code, name and way stay in op_list.h. The layouts
// live in op_layouts/, a file per area; this header gathers them.
#pragma once

#include "protocol/op_layouts/contexts.h"  // IWYU pragma: export
#include "protocol/op_layouts/data.h"      // IWYU pragma: export
#include "protocol/op_layouts/graphs.h"    // IWYU pragma: export
#include "protocol/op_layouts/kernels.h"   // IWYU pragma: export
#include "protocol/op_layouts/memory.h"    // IWYU pragma: export
#include "protocol/op_layouts/modules.h"   // IWYU pragma: export
#include "protocol/op_layouts/session.h"   // IWYU pragma: export
