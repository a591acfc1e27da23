// The client's cache of function and kernel attributes (attributes.cc).
#pragma once

#include <cstdint>

namespace scuda::client {

// Function `fn` was made from kernel `kernel`: they share attributes, so a
// set on either forgets what the cache holds for both.
void note_kernel_function(uint64_t kernel, uint64_t fn);

}  // namespace scuda::client
