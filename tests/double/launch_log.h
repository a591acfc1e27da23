// Appends one line per launch to the file named by $SCUDA_DOUBLE_LOG:
//   launch <name> grid=X,Y,Z block=X,Y,Z shmem=N params=<lowercase hex>
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
};

void log_launch(const LaunchRecord& record);

}  // namespace scuda_double
