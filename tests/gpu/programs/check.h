// CK(call): a failed CUDA runtime call prints where and why, then the
// program's RESULT line (NAME must be defined first), and exits 1.
#pragma once

#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>

#define CK(call)                                                                               \
  do {                                                                                         \
    cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) {                                                                   \
      fprintf(stderr, "%s:%d: %s: %s (%s)\n", __FILE__, __LINE__, #call, cudaGetErrorName(e_), \
              cudaGetErrorString(e_));                                                         \
      printf("RESULT %s FAIL %s at line %d\n", NAME, cudaGetErrorName(e_), __LINE__);          \
      exit(1);                                                                                 \
    }                                                                                          \
  } while (0)
