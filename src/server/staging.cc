#include "server/staging.h"

#include <sys/mman.h>

#include "protocol/frame.h"

namespace scuda::server {

Staging::~Staging() {
  if (data_) munmap(data_, protocol::kChunkSize);
}

uint8_t* Staging::get(const DriverTable& d) {
  if (!data_) {
    void* p = mmap(nullptr, protocol::kChunkSize, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return nullptr;
    data_ = static_cast<uint8_t*>(p);
  }
  if (!registered_ && d.cuMemHostRegister_v2)
    registered_ = d.cuMemHostRegister_v2(data_, protocol::kChunkSize,
                                         CU_MEMHOSTREGISTER_PORTABLE) == CUDA_SUCCESS;
  return data_;
}

}  // namespace scuda::server
