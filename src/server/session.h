// One client's session, in its own process: owns the driver, the handle map
// and the connection, and dispatches each request frame to its handler.
#pragma once

#include "common/driver_table.h"
#include "server/handles.h"

namespace scuda::server {

class Session {
 public:
  explicit Session(const DriverTable& driver) : driver_(driver) {}

  const DriverTable& driver() const { return driver_; }
  HandleTable& handles() { return handles_; }

 private:
  const DriverTable& driver_;
  HandleTable handles_;
};

}  // namespace scuda::server
