// Opening the client's lanes from a test: they open in the background at
// the first large copy, and a test that counts replies or compares paths
// needs them open before it measures.
#pragma once

#include <cuda.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

extern "C" uint32_t scuda_lanes_open();

namespace scuda::test {

// Copies `size` zero bytes into `dev` (a copy large enough opens the lanes),
// then waits up to 10 s for the lanes; fails the test if none opened.
inline void open_lanes(CUdeviceptr dev, size_t size) {
  std::vector<uint8_t> zeros(size);
  ASSERT_EQ(cuMemcpyHtoD(dev, zeros.data(), size), CUDA_SUCCESS);
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!scuda_lanes_open() && std::chrono::steady_clock::now() < give_up)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  ASSERT_GT(scuda_lanes_open(), 0u);
}

}  // namespace scuda::test
