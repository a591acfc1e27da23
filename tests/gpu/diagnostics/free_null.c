/* free_null: what the driver answers to cuMemFree(0) with a current context,
 * and to cudaFree(0) through cudart. Build and run:
 *   gcc -o free_null free_null.c -I/usr/local/cuda/include \
 *       -L/usr/local/cuda/lib64 -lcudart -lcuda */
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>

int main(void) {
  printf("cudaFree(0): %d\n", (int)cudaFree(0));
  printf("cuMemFree(0): %d\n", (int)cuMemFree(0));
  return 0;
}
