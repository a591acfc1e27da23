// The client's cache of function and kernel attributes (attributes.cc).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "protocol/codec.h"

namespace scuda::client {

// Function `fn` was made from kernel `kernel`: they share attributes, so a
// set on either forgets what the cache holds for both.
void note_kernel_function(uint64_t kernel, uint64_t fn);

// Caches the attributes a lookup reply carries for function or kernel `id`
// (module_ops.cc write_attributes); false if they are malformed.
bool read_attributes(protocol::Reader& r, uint64_t id);

// The answer to cuOccupancyMaxActiveClusters (`which` 0) or
// MaxPotentialClusterSize (1) for function `fn` and the launch
// configuration encoded as `config`: cached, else ask()'s, then cached until
// an attribute of the kernel's family changes. `lasting_config`, the same
// configuration in terms that hold across runs, if it has them, keeps the
// answer for later runs too (answer_cache.h).
CUresult cached_cluster_occupancy(uint64_t fn, uint8_t which, std::string config,
                                  std::optional<std::string> lasting_config, int* value,
                                  const std::function<CUresult()>& ask);

}  // namespace scuda::client
