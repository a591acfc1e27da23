/* cublas_create: the smallest program that reaches cuBLAS's start-up, where
 * PyTorch and CuPy fail through scuda (issue 4). Build and run:
 *   gcc -o cublas_create cublas_create.c -I/usr/local/cuda/include \
 *       -L/usr/local/cuda/lib64 -lcublas
 *   SCUDA_LOG_LEVEL=trace build/bin/scuda run --server HOST:PORT -- ./cublas_create
 * Against the driver test double it gets as far as cuLibraryLoadData. */
#include <cublas_v2.h>
#include <stdio.h>

int main(void) {
  cublasHandle_t handle;
  cublasStatus_t status = cublasCreate(&handle);
  printf("cublasCreate: %d\n", (int)status);
  if (status == CUBLAS_STATUS_SUCCESS) cublasDestroy(handle);
  return status != CUBLAS_STATUS_SUCCESS;
}
