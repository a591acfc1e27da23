// Appends one line per launch, and one per context synchronization, to the
// file named by $SCUDA_DOUBLE_LOG:
//   launch <name> grid=X,Y,Z block=X,Y,Z shmem=N params=<lowercase hex>[ cooperative]
//   synchronize
//   profiler start|stop
//   primary context activated
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace scuda_double {

struct LaunchRecord {
  std::string name;
  unsigned grid[3];
  unsigned block[3];
  unsigned shmem;
  std::vector<uint8_t> params;
  bool cooperative = false;  // CU_LAUNCH_ATTRIBUTE_COOPERATIVE was set
};

void log_launch(const LaunchRecord& record);
void log_synchronize();
void log_line(const char* line);  // any other line, such as "profiler start"

}  // namespace scuda_double
