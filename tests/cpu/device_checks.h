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
  EXPECT_EQ(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p),
            CUDA_SUCCESS);
  return ordinal;
}

}  // namespace scuda::test
