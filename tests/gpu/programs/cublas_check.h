// CKB(call): CK for cuBLAS; a failed call prints where and its status, then
// the program's RESULT line (NAME must be defined first), and exits 1.
#pragma once

#include <cublas_v2.h>

#include "check.h"

#define CKB(call)                                                                      \
  do {                                                                                 \
    cublasStatus_t s_ = (call);                                                        \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                 \
      fprintf(stderr, "%s:%d: %s: cuBLAS status %d\n", __FILE__, __LINE__, #call, s_); \
      printf("RESULT %s FAIL cublas status %d at line %d\n", NAME, s_, __LINE__);      \
      exit(1);                                                                         \
    }                                                                                  \
  } while (0)
