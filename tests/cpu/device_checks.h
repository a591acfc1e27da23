// What the tests of several devices share: bytes to copy, and the device
// the client says an address belongs to.
#pragma once

#include <cuda.h>
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace scuda::test {

// `size` bytes that differ from one seed to another and along the buffer.
inline std::vector<uint8_t> pattern(size_t size, unsigned seed) {
  std::vector<uint8_t> bytes(size);
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(i * seed + (i >> 12) + seed);
  return bytes;
}

// The device ordinal of the memory at `p`, as cuPointerGetAttribute says.
inline int device_of(CUdeviceptr p) {
  int ordinal = -1;
  EXPECT_EQ(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p), CUDA_SUCCESS);
  return ordinal;
}

// Device memory the program maps itself (virtual memory management): `size`
// bytes of device `dev`'s memory mapped at the start of a range of
// `reserved` bytes; unmapped and freed when destroyed. ok() says whether
// every step succeeded.
class OwnMapping {
 public:
  OwnMapping(int dev, size_t size, size_t reserved) : size_(size), reserved_(reserved) {
    CUmemAllocationProp prop{};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location = {CU_MEM_LOCATION_TYPE_DEVICE, dev};
    ok_ = cuMemCreate(&memory_, size, &prop, 0) == CUDA_SUCCESS &&
          cuMemAddressReserve(&va_, reserved, 0, 0, 0) == CUDA_SUCCESS &&
          cuMemMap(va_, size, 0, memory_, 0) == CUDA_SUCCESS;
  }
  ~OwnMapping() {
    EXPECT_EQ(cuMemUnmap(va_, size_), CUDA_SUCCESS);
    EXPECT_EQ(cuMemAddressFree(va_, reserved_), CUDA_SUCCESS);
    EXPECT_EQ(cuMemRelease(memory_), CUDA_SUCCESS);
  }
  OwnMapping(const OwnMapping&) = delete;
  OwnMapping& operator=(const OwnMapping&) = delete;

  bool ok() const { return ok_; }
  CUdeviceptr address() const { return va_; }

 private:
  size_t size_, reserved_;
  CUmemGenericAllocationHandle memory_ = 0;
  CUdeviceptr va_ = 0;
  bool ok_ = false;
};

}  // namespace scuda::test
