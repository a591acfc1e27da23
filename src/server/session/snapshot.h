// The device snapshot sent in the handshake.
#pragma once

#include <string>

#include "common/driver_table.h"
#include "protocol/handshake.h"

namespace scuda::server {

// Initialises the driver and fills in its version and every device's
// identity and attributes. On failure says why.
bool take_snapshot(const DriverTable& d, protocol::Welcome* w, std::string* error);

}  // namespace scuda::server
