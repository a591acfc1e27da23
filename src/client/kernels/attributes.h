// The client's cache of function and kernel attributes (attributes.cc).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "protocol/codec.h"
#include "protocol/op_layouts.h"

namespace scuda::client {

// Function `fn` was made from kernel `kernel`: they share attributes, so a
// set on either forgets what the cache holds for both.
void note_kernel_function(uint64_t kernel, uint64_t fn);

// What has been set on `id`'s kernel family so far.
struct SetState {
  uint64_t generation = 0;  // how many sets: 0 while as the image made it
  std::string digest;       // the sets, named alike in any run; empty while none
};
SetState set_state(uint64_t id);

// Takes the attributes a description carries for function or kernel `id`
// and the server's number of the device they are of (`local`), asked for
// when the family's set generation was `generation`; *device is the
// program's number. False if they are malformed. They are cached unless a
// set has come since, which makes them stale.
bool note_attributes(uint64_t id, uint64_t generation, int32_t local,
                     const std::vector<protocol::op::AttributeValue>& values, int32_t* device);

// The answer to cuOccupancyMaxActiveClusters (`which` 0) or
// MaxPotentialClusterSize (1) for function `fn` and the launch
// configuration encoded as `config`: cached, else ask()'s, then cached until
// an attribute of the kernel's family changes. `lasting_config`, the same
// configuration in terms that hold across runs, if it has them, keeps the
// answer for later runs too (answer_cache.h).
CUresult cached_cluster_occupancy(uint64_t fn, uint8_t which, std::string config,
                                  const std::optional<std::string>& lasting_config, int* value,
                                  const std::function<CUresult()>& ask);

}  // namespace scuda::client
