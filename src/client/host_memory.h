// The client's page-locked host memory (host_memory.cc).
#pragma once

namespace scuda::client {

// True when `p` lies inside a block from cuMemHostAlloc / cuMemAllocHost;
// then *flags (if given) are the block's.
bool is_host_block(const void* p, unsigned* flags = nullptr);

}  // namespace scuda::client
