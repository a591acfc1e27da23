// The client's page-locked host memory (host_memory.cc).
#pragma once

namespace scuda::client {

// True when `p` lies inside a block from cuMemHostAlloc / cuMemAllocHost.
bool is_host_block(const void* p);

}  // namespace scuda::client
