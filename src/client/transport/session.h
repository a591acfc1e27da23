// The client's session with its server: opened by cuInit, alive until exit.
#pragma once

#include <cuda.h>

#include "client/transport/connection.h"

namespace scuda::client {

// Connects to the configured server once; later calls return the first
// result. CUDA_ERROR_NO_DEVICE (with the reason logged) if it cannot.
CUresult open_session();

// The open connection, or nullptr before a successful cuInit.
Connection* connection();

// The snapshot of the server's devices and driver, valid once open.
const protocol::Welcome& snapshot();

}  // namespace scuda::client
