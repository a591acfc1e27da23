// Kernels the double really runs on the host, matched by name and
// parameter sizes:
//   vadd(const float* a, const float* b, float* c, int n)  c[i] = a[i] + b[i]
//   fill(unsigned* p, unsigned v, int n)                    p[i] = v
//   scale(float* p, float s, int n)                         p[i] *= s
//   say(int n)                                              prints "say n" on stdout
//   nap(int ms)                                             sleeps for ms milliseconds
//   echo(unsigned* w, int ms)     waits up to ms for w[0] != 0, then w[1] = w[0] + 1
// for every i < n, whatever the grid. Other kernels do nothing.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <vector>

#include "module_image.h"

namespace scuda_double {

// CUDA_ERROR_ILLEGAL_ADDRESS when a pointer range is outside live memory.
CUresult run_builtin(const KernelDesc& kernel, const std::vector<uint8_t>& params);

}  // namespace scuda_double
