// graph_explicit: a diamond of kernel nodes built with cudaGraphAdd*Node
// (memset root, two branches, a join, a device-to-device copy), instantiated
// and launched; a kernel node's arguments changed in the executable graph
// (cudaGraphExecKernelNodeSetParams), then restored by cudaGraphExecUpdate
// from the graph; node queries; and a conditional WHILE node whose body
// counts down a device counter.
#include <cuda_runtime.h>
#include <cstdint>
#include <cstdio>
#include <vector>

#define NAME "graph_explicit"
#include "check.h"

const int kN = 1 << 14, kLoops = 6;

__global__ void init(int* p, int v, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) p[i] = v + i % 5;
}

__global__ void times(const int* in, int* out, int k, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * k;
}

__global__ void add(const int* a, const int* b, int* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

// The body of the WHILE node: one step per iteration, until the counter ends.
__global__ void step(int* counter, int* steps, cudaGraphConditionalHandle handle) {
  ++*steps;
  if (--*counter == 0) cudaGraphSetConditional(handle, 0);
}

cudaKernelNodeParams kernel(void* fn, void** args, int n) {
  cudaKernelNodeParams p = {};
  p.func = fn;
  p.gridDim = dim3((n + 255) / 256);
  p.blockDim = dim3(256);
  p.kernelParams = args;
  return p;
}

int checksum(const int* d, int n) {
  std::vector<int> h(n);
  CK(cudaMemcpy(h.data(), d, n * sizeof(int), cudaMemcpyDeviceToHost));
  long long s = 0;
  for (int v : h) s += v;
  return static_cast<int>(s % 1000000007);
}

int main() {
  int *base, *left, *right, *sum, *copy;
  const size_t bytes = kN * sizeof(int);
  for (int** p : {&base, &left, &right, &sum, &copy}) CK(cudaMalloc(p, bytes));
  cudaStream_t s;
  CK(cudaStreamCreate(&s));
  int n = kN, one = 1, two = 2, three = 3;

  cudaGraph_t g;
  CK(cudaGraphCreate(&g, 0));
  cudaGraphNode_t clear, root, l, r, join, out;
  cudaMemsetParams m = {};
  m.dst = copy;
  m.value = 0;
  m.elementSize = 4;
  m.width = kN;
  m.height = 1;
  CK(cudaGraphAddMemsetNode(&clear, g, nullptr, 0, &m));
  void* init_args[] = {&base, &one, &n};
  cudaKernelNodeParams kp = kernel((void*)init, init_args, kN);
  CK(cudaGraphAddKernelNode(&root, g, &clear, 1, &kp));
  void* left_args[] = {&base, &left, &two, &n};
  kp = kernel((void*)times, left_args, kN);
  CK(cudaGraphAddKernelNode(&l, g, &root, 1, &kp));
  void* right_args[] = {&base, &right, &three, &n};
  kp = kernel((void*)times, right_args, kN);
  CK(cudaGraphAddKernelNode(&r, g, &root, 1, &kp));
  cudaGraphNode_t both[] = {l, r};
  void* add_args[] = {&left, &right, &sum, &n};
  kp = kernel((void*)add, add_args, kN);
  CK(cudaGraphAddKernelNode(&join, g, both, 2, &kp));
  CK(cudaGraphAddMemcpyNode1D(&out, g, &join, 1, copy, sum, bytes, cudaMemcpyDeviceToDevice));

  size_t count = 0, roots = 0, deps = 0;
  CK(cudaGraphGetNodes(g, nullptr, &count));
  CK(cudaGraphGetRootNodes(g, nullptr, &roots));
  CK(cudaGraphNodeGetDependencies(join, nullptr, nullptr, &deps));
  printf("nodes %zu, roots %zu, join depends on %zu\n", count, roots, deps);
  cudaGraphNode_t got[2];
  CK(cudaGraphNodeGetDependencies(join, got, nullptr, &deps));
  const bool same = (got[0] == l && got[1] == r) || (got[0] == r && got[1] == l);
  printf("dependencies are the added nodes: %s\n", same ? "yes" : "no");

  cudaGraphExec_t exec;
  CK(cudaGraphInstantiate(&exec, g, 0));
  CK(cudaGraphLaunch(exec, s));
  CK(cudaStreamSynchronize(s));
  const int first = checksum(copy, kN);  // (2 + 3) * (1 + i%5)
  printf("diamond checksum: %d\n", first);

  int seven = 7;
  void* right7_args[] = {&base, &right, &seven, &n};
  kp = kernel((void*)times, right7_args, kN);
  CK(cudaGraphExecKernelNodeSetParams(exec, r, &kp));
  CK(cudaGraphLaunch(exec, s));
  CK(cudaStreamSynchronize(s));
  const int changed = checksum(copy, kN);  // (2 + 7) * (1 + i%5)
  printf("after exec set params: %d\n", changed);

  cudaGraphExecUpdateResultInfo info;
  CK(cudaGraphExecUpdate(exec, g, &info));
  CK(cudaGraphLaunch(exec, s));
  CK(cudaStreamSynchronize(s));
  const int restored = checksum(copy, kN);
  printf("after exec update: %d (result %d)\n", restored, (int)info.result);

  cudaKernelNodeParams read = {};
  CK(cudaGraphKernelNodeGetParams(r, &read));
  printf("right node: grid %u, block %u, k = %d\n", read.gridDim.x, read.blockDim.x,
         *static_cast<int*>(read.kernelParams[2]));

  // WHILE node: the body runs until the device counter reaches zero.
  int *counter, *steps;
  CK(cudaMalloc(&counter, sizeof(int)));
  CK(cudaMalloc(&steps, sizeof(int)));
  cudaGraph_t cg;
  CK(cudaGraphCreate(&cg, 0));
  cudaGraphConditionalHandle handle;
  CK(cudaGraphConditionalHandleCreate(&handle, cg, 1, cudaGraphCondAssignDefault));
  cudaGraphNodeParams cp = {};
  cp.type = cudaGraphNodeTypeConditional;
  cp.conditional.handle = handle;
  cp.conditional.type = cudaGraphCondTypeWhile;
  cp.conditional.size = 1;
  cudaGraphNode_t loop;
  CK(cudaGraphAddNode(&loop, cg, nullptr, nullptr, 0, &cp));
  cudaGraph_t body = cp.conditional.phGraph_out[0];
  void* step_args[] = {&counter, &steps, &handle};
  cudaKernelNodeParams sp = {};
  sp.func = (void*)step;
  sp.gridDim = dim3(1);
  sp.blockDim = dim3(1);
  sp.kernelParams = step_args;
  cudaGraphNode_t body_node;
  CK(cudaGraphAddKernelNode(&body_node, body, nullptr, 0, &sp));
  cudaGraphExec_t cexec;
  CK(cudaGraphInstantiate(&cexec, cg, 0));
  const int start = kLoops;
  CK(cudaMemcpy(counter, &start, sizeof start, cudaMemcpyHostToDevice));
  CK(cudaMemset(steps, 0, sizeof(int)));
  CK(cudaGraphLaunch(cexec, s));
  CK(cudaStreamSynchronize(s));
  int ran = 0;
  CK(cudaMemcpy(&ran, steps, sizeof ran, cudaMemcpyDeviceToHost));
  printf("while node ran its body %d times\n", ran);

  CK(cudaGraphExecDestroy(cexec));
  CK(cudaGraphDestroy(cg));
  CK(cudaGraphExecDestroy(exec));
  CK(cudaGraphDestroy(g));
  CK(cudaStreamDestroy(s));
  for (int* p : {base, left, right, sum, copy, counter, steps}) CK(cudaFree(p));

  long long want5 = 0;
  for (int i = 0; i < kN; ++i) want5 += 5 * (1 + i % 5);
  const bool ok = count == 6 && roots == 1 && same && first == want5 && changed == want5 / 5 * 9 &&
                  restored == first && ran == kLoops &&
                  *static_cast<int*>(read.kernelParams[2]) == 3;
  printf("RESULT %s %s diamond, exec set/update, while node x%d\n", NAME, ok ? "PASS" : "FAIL",
         ran);
  return ok ? 0 : 1;
}
