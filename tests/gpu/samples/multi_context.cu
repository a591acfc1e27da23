// multi_context: two driver-API contexts on one device. Push/pop keeps a
// per-thread stack; each context gets its own allocation, its own module
// (from PTX) with its own copy of a global, and a launch; then two threads
// make one context each current with cuCtxSetCurrent and work at once.
// Every context must see only its own global's value.
// nvcc: -lcuda
#include <cuda.h>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#define NAME "multi_context"

#define CU(call)                                                                    \
  do {                                                                              \
    CUresult r_ = (call);                                                           \
    if (r_ != CUDA_SUCCESS) {                                                       \
      const char* n_ = nullptr;                                                     \
      cuGetErrorName(r_, &n_);                                                      \
      fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, n_ ? n_ : "?"); \
      printf("RESULT %s FAIL %s at line %d\n", NAME, n_ ? n_ : "?", __LINE__);      \
      exit(1);                                                                      \
    }                                                                               \
  } while (0)

// p[i] = p[i] * 2 + tag, with `tag` a global of the module.
static const char kPtx[] = R"(
.version 8.0
.target sm_90
.address_size 64
.visible .global .align 4 .u32 tag;
.visible .entry add_tag(
	.param .u64 add_tag_param_0,
	.param .u32 add_tag_param_1
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<10>;
	.reg .b64 	%rd<5>;
	ld.param.u64 	%rd1, [add_tag_param_0];
	ld.param.u32 	%r2, [add_tag_param_1];
	mov.u32 	%r3, %ctaid.x;
	mov.u32 	%r4, %ntid.x;
	mov.u32 	%r5, %tid.x;
	mad.lo.s32 	%r1, %r3, %r4, %r5;
	setp.ge.s32 	%p1, %r1, %r2;
	@%p1 bra 	$L__BB0_2;
	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.s32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd2, %rd3;
	ld.global.u32 	%r6, [%rd4];
	shl.b32 	%r7, %r6, 1;
	ld.global.u32 	%r8, [tag];
	add.s32 	%r9, %r7, %r8;
	st.global.u32 	[%rd4], %r9;
$L__BB0_2:
	ret;
}
)";

constexpr int kN = 4096;

// What one context holds.
struct Work {
  CUcontext ctx = nullptr;
  CUmodule mod = nullptr;
  CUfunction fn = nullptr;
  CUdeviceptr data = 0;
  int tag = 0;
};

// With w.ctx current: a module, its global set to the context's tag, and
// the data.
static void prepare(Work& w) {
  CU(cuModuleLoadData(&w.mod, kPtx));
  CU(cuModuleGetFunction(&w.fn, w.mod, "add_tag"));
  CUdeviceptr tag_addr = 0;
  size_t tag_size = 0;
  CU(cuModuleGetGlobal(&tag_addr, &tag_size, w.mod, "tag"));
  CU(cuMemcpyHtoD(tag_addr, &w.tag, sizeof w.tag));
  CU(cuMemAlloc(&w.data, kN * sizeof(int)));
  std::vector<int> init(kN);
  for (int i = 0; i < kN; ++i) init[i] = i;
  CU(cuMemcpyHtoD(w.data, init.data(), kN * sizeof(int)));
}

// With w.ctx current: `rounds` launches, then the data back.
static int run(Work& w, int rounds) {
  int n = kN;
  void* params[] = {&w.data, &n};
  for (int r = 0; r < rounds; ++r)
    CU(cuLaunchKernel(w.fn, kN / 256, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr));
  CU(cuCtxSynchronize());
  std::vector<int> out(kN);
  CU(cuMemcpyDtoH(out.data(), w.data, kN * sizeof(int)));
  int wrong = 0;
  for (int i = 0; i < kN; ++i) {
    long long want = i;
    for (int r = 0; r < rounds; ++r) want = want * 2 + w.tag;
    wrong += out[i] != (int)want;
  }
  return wrong;
}

int main() {
  CU(cuInit(0));
  CUdevice dev;
  CU(cuDeviceGet(&dev, 0));
  Work a, b;
  a.tag = 1;
  b.tag = 1000;
  CU(cuCtxCreate(&a.ctx, nullptr, 0, dev));  // becomes current
  prepare(a);
  CU(cuCtxCreate(&b.ctx, nullptr, 0, dev));  // pushed over a
  prepare(b);
  int failures = 0;

  // The stack: b on top of a; popping b leaves a current.
  CUcontext cur = nullptr, popped = nullptr;
  CU(cuCtxGetCurrent(&cur));
  bool stack_ok = cur == b.ctx;
  CU(cuCtxPopCurrent(&popped));
  CU(cuCtxGetCurrent(&cur));
  stack_ok = stack_ok && popped == b.ctx && cur == a.ctx;
  CU(cuCtxPushCurrent(b.ctx));
  CU(cuCtxGetCurrent(&cur));
  stack_ok = stack_ok && cur == b.ctx;
  CU(cuCtxPopCurrent(&popped));
  printf("push/pop stack %s\n", stack_ok ? "ok" : "WRONG");
  failures += !stack_ok;

  // Each context in turn on this thread.
  CU(cuCtxSetCurrent(a.ctx));
  int wa = run(a, 1);
  CU(cuCtxPushCurrent(b.ctx));
  int wb = run(b, 1);
  CU(cuCtxPopCurrent(&popped));
  printf("context a, one launch: %d wrong\n", wa);
  printf("context b, one launch: %d wrong\n", wb);
  failures += wa != 0 || wb != 0;

  // Two threads, one context each, at the same time; a fresh start for the data.
  int wrong[2] = {0, 0};
  Work* works[2] = {&a, &b};
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t)
    threads.emplace_back([&, t] {
      Work& w = *works[t];
      CU(cuCtxSetCurrent(w.ctx));
      CUcontext mine = nullptr;
      CU(cuCtxGetCurrent(&mine));
      std::vector<int> init(kN);
      for (int i = 0; i < kN; ++i) init[i] = i;
      CU(cuMemcpyHtoD(w.data, init.data(), kN * sizeof(int)));
      wrong[t] = mine == w.ctx ? run(w, 3) : -1;
    });
  for (std::thread& t : threads) t.join();
  printf("thread with context a, three launches: %d wrong\n", wrong[0]);
  printf("thread with context b, three launches: %d wrong\n", wrong[1]);
  failures += wrong[0] != 0 || wrong[1] != 0;

  // The main thread's current context is still a.
  CU(cuCtxGetCurrent(&cur));
  printf("main thread still in context a: %s\n", cur == a.ctx ? "yes" : "NO");
  failures += cur != a.ctx;

  for (Work* w : works) {
    CU(cuCtxSetCurrent(w->ctx));
    CU(cuMemFree(w->data));
    CU(cuModuleUnload(w->mod));
  }
  CU(cuCtxSetCurrent(nullptr));
  CU(cuCtxDestroy(a.ctx));
  CU(cuCtxDestroy(b.ctx));
  printf("RESULT %s %s %d failures\n", NAME, failures ? "FAIL" : "PASS", failures);
  return failures ? 1 : 0;
}
