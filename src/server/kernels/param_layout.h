// A function's or kernel's parameter layout, as the driver reports it: what
// the client packs launch arguments by, and the server unpacks a kernel
// node's arguments by.
#pragma once

#include <cuda.h>

#include <optional>
#include <vector>

#include "common/driver_table.h"
#include "protocol/codec.h"
#include "protocol/ops.h"

namespace scuda::server {

using ParamLayout = std::vector<protocol::ParamSlot>;

// nullopt when the driver cannot tell, as for a kernel with no current context.
std::optional<ParamLayout> function_layout(const DriverTable& d, CUfunction fn);
std::optional<ParamLayout> kernel_layout(const DriverTable& d, CUkernel kernel);

}  // namespace scuda::server
