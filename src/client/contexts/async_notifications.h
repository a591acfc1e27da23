// The program's asynchronous notification callbacks
// (cuDeviceRegisterAsyncNotification): the session's driver calls a
// stand-in, which sends each notification over the callback channel, where
// the program's callback runs with its own data.
#pragma once

#include <cuda.h>

#include <cstdint>

namespace scuda::client {

// Runs the callback registered as `id` with a copy of `info`; false when
// no callback has that id.
bool run_async_notification(uint64_t id, const CUasyncNotificationInfo& info);

}  // namespace scuda::client
