/* driver_calls_timed.c: when a program's module and library loads, kernel
 * lookups and launches reach the real driver, and how long each takes,
 * natively (no scuda). cudart finds the driver's entry points through
 * cuGetProcAddress, which it looks up with dlsym: this preloaded library
 * answers that dlsym and hands out timed wrappers for the calls below.
 *   gcc -O2 -shared -fPIC -I/usr/local/cuda/include \
 *       -o /tmp/driver_calls_timed.so tests/gpu/diagnostics/driver_calls_timed.c -ldl
 *   LD_PRELOAD=/tmp/driver_calls_timed.so PROGRAM
 * Each call prints `[spy] at_ms call took_ms detail` on stderr; lookups and
 * launches only when they take over 0.05 ms, with a count of all at exit.
 * Figures in docs/bench/managed.md. */
#define _GNU_SOURCE
#include <cuda.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef void* (*dlsym_fn)(void*, const char*);
typedef CUresult (*gpa2_fn)(const char*, void**, int, cuuint64_t,
                            CUdriverProcAddressQueryResult*);
typedef CUresult (*gpa1_fn)(const char*, void**, int, cuuint64_t);

static double start_ms;
static atomic_long lookups, launches;

static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

__attribute__((constructor)) static void begin(void) { start_ms = now_ms(); }

__attribute__((destructor)) static void end(void) {
  fprintf(stderr, "[spy] %.1f exit: %ld lookups, %ld launches\n", now_ms() - start_ms,
          atomic_load(&lookups), atomic_load(&launches));
}

static void say(const char* call, double began, const char* detail) {
  fprintf(stderr, "[spy] %.1f %s %.3f %s\n", began - start_ms, call, now_ms() - began, detail);
}

/* A fatbin's size from its header (magic 0xBA55ED50, then 16-bit version
 * and header size, then the 64-bit size of what follows), or 0; through
 * the wrapper nvcc emits (magic 0x466243B1, version, then the fatbin's
 * address) too. */
static unsigned long long fatbin_bytes(const void* image) {
  const unsigned char* p = image;
  uint32_t magic;
  uint16_t header;
  uint64_t rest;
  if (!p) return 0;
  memcpy(&magic, p, 4);
  if (magic == 0x466243B1u) {
    memcpy(&p, p + 8, sizeof p);
    if (!p) return 0;
    memcpy(&magic, p, 4);
  }
  if (magic != 0xBA55ED50u) return 0;
  memcpy(&header, p + 6, 2);
  memcpy(&rest, p + 8, 8);
  return header + rest;
}

#define REAL(name) static __typeof__(&name) real_##name

REAL(cuLibraryLoadData);
REAL(cuModuleLoadData);
REAL(cuModuleLoadDataEx);
REAL(cuLibraryGetKernel);
REAL(cuModuleGetFunction);
REAL(cuKernelGetFunction);
REAL(cuLaunchKernel);
REAL(cuLaunchKernelEx);

static CUresult timed_cuLibraryLoadData(CUlibrary* lib, const void* code, CUjit_option* jit,
                                        void** jit_values, unsigned n_jit,
                                        CUlibraryOption* options, void** option_values,
                                        unsigned n_options) {
  const double t = now_ms();
  CUresult rc = real_cuLibraryLoadData(lib, code, jit, jit_values, n_jit, options, option_values,
                                       n_options);
  char detail[160];
  snprintf(detail, sizeof detail, "bytes=%llu jit_options=%u library_options=%u%s rc=%d",
           fatbin_bytes(code), n_jit, n_options,
           n_options && options[0] == CU_LIBRARY_BINARY_IS_PRESERVED ? " (preserved)" : "",
           (int)rc);
  say("cuLibraryLoadData", t, detail);
  return rc;
}

static CUresult timed_cuModuleLoadData(CUmodule* mod, const void* image) {
  const double t = now_ms();
  CUresult rc = real_cuModuleLoadData(mod, image);
  char detail[64];
  snprintf(detail, sizeof detail, "bytes=%llu rc=%d", fatbin_bytes(image), (int)rc);
  say("cuModuleLoadData", t, detail);
  return rc;
}

static CUresult timed_cuModuleLoadDataEx(CUmodule* mod, const void* image, unsigned n,
                                         CUjit_option* options, void** values) {
  const double t = now_ms();
  CUresult rc = real_cuModuleLoadDataEx(mod, image, n, options, values);
  char detail[64];
  snprintf(detail, sizeof detail, "bytes=%llu rc=%d", fatbin_bytes(image), (int)rc);
  say("cuModuleLoadDataEx", t, detail);
  return rc;
}

/* Lookups and launches: counted, and shown only when slow. */
static void note(const char* call, double t, atomic_long* count, const char* detail) {
  atomic_fetch_add(count, 1);
  if (now_ms() - t > 0.05) say(call, t, detail);
}

static CUresult timed_cuLibraryGetKernel(CUkernel* k, CUlibrary lib, const char* name) {
  const double t = now_ms();
  CUresult rc = real_cuLibraryGetKernel(k, lib, name);
  note("cuLibraryGetKernel", t, &lookups, name);
  return rc;
}

static CUresult timed_cuModuleGetFunction(CUfunction* f, CUmodule mod, const char* name) {
  const double t = now_ms();
  CUresult rc = real_cuModuleGetFunction(f, mod, name);
  note("cuModuleGetFunction", t, &lookups, name);
  return rc;
}

static CUresult timed_cuKernelGetFunction(CUfunction* f, CUkernel k) {
  const double t = now_ms();
  CUresult rc = real_cuKernelGetFunction(f, k);
  note("cuKernelGetFunction", t, &lookups, "");
  return rc;
}

static CUresult timed_cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                     unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                     CUstream s, void** params, void** extra) {
  const double t = now_ms();
  CUresult rc = real_cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, s, params, extra);
  note("cuLaunchKernel", t, &launches, "");
  return rc;
}

static CUresult timed_cuLaunchKernelEx(const CUlaunchConfig* config, CUfunction f, void** params,
                                       void** extra) {
  const double t = now_ms();
  CUresult rc = real_cuLaunchKernelEx(config, f, params, extra);
  note("cuLaunchKernelEx", t, &launches, "");
  return rc;
}

/* The wrapper for `symbol`, remembering the driver's function; else `pfn`. */
static void* wrap(const char* symbol, void* pfn) {
#define WRAP(name)                          \
  if (strcmp(symbol, #name) == 0) {         \
    real_##name = (__typeof__(&name))pfn;   \
    return (void*)timed_##name;             \
  }
  if (!pfn) return pfn;
  WRAP(cuLibraryLoadData)
  WRAP(cuModuleLoadData)
  WRAP(cuModuleLoadDataEx)
  WRAP(cuLibraryGetKernel)
  WRAP(cuModuleGetFunction)
  WRAP(cuKernelGetFunction)
  WRAP(cuLaunchKernel)
  WRAP(cuLaunchKernelEx)
  return pfn;
#undef WRAP
}

static gpa2_fn real_gpa2;
static gpa1_fn real_gpa1;

static CUresult timed_gpa2(const char* symbol, void** pfn, int version, cuuint64_t flags,
                           CUdriverProcAddressQueryResult* status) {
  CUresult rc = real_gpa2(symbol, pfn, version, flags, status);
  if (rc == CUDA_SUCCESS && pfn) *pfn = wrap(symbol, *pfn);
  return rc;
}

static CUresult timed_gpa1(const char* symbol, void** pfn, int version, cuuint64_t flags) {
  CUresult rc = real_gpa1(symbol, pfn, version, flags);
  if (rc == CUDA_SUCCESS && pfn) *pfn = wrap(symbol, *pfn);
  return rc;
}

static dlsym_fn real_dlsym(void) {
  static dlsym_fn real;
  if (!real) real = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!real) real = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  return real;
}

void* dlsym(void* handle, const char* name) {
  void* p = real_dlsym()(handle, name);
  if (!p) return p;
  if (strcmp(name, "cuGetProcAddress_v2") == 0) {
    real_gpa2 = (gpa2_fn)p;
    return (void*)timed_gpa2;
  }
  if (strcmp(name, "cuGetProcAddress") == 0) {
    real_gpa1 = (gpa1_fn)p;
    return (void*)timed_gpa1;
  }
  return wrap(name, p);
}
