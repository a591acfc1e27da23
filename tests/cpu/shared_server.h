// One scuda server (on the driver double) for every test of a binary that
// links shared_server.cc: started before the first test and named by
// SCUDA_SERVER for the client library, stopped after the last.
#pragma once

#include "server_process.h"

namespace scuda::test {

ServerProcess& shared_server();

}  // namespace scuda::test
