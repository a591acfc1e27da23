// The per-thread-stream variants (_ptsz, _ptds) of the entry points the
// session calls for a client's per-thread calls. Work runs synchronously, so
// the calling thread's default stream behaves as the legacy one; each
// variant logs "per-thread NAME" ($SCUDA_DOUBLE_LOG) and runs its base, so
// that a test can see which variant the session reached.
#include <cuda.h>

#include "launch_log.h"

using scuda_double::log_line;

extern "C" {

CUresult CUDAAPI cuStreamQuery_ptsz(CUstream s) {
  log_line("per-thread cuStreamQuery_ptsz");
  return cuStreamQuery(s);
}

CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream s) {
  log_line("per-thread cuStreamSynchronize_ptsz");
  return cuStreamSynchronize(s);
}

CUresult CUDAAPI cuEventRecord_ptsz(CUevent e, CUstream s) {
  log_line("per-thread cuEventRecord_ptsz");
  return cuEventRecord(e, s);
}

CUresult CUDAAPI cuEventRecordWithFlags_ptsz(CUevent e, CUstream s, unsigned int flags) {
  log_line("per-thread cuEventRecordWithFlags_ptsz");
  return cuEventRecordWithFlags(e, s, flags);
}

CUresult CUDAAPI cuStreamGetCtx_ptsz(CUstream s, CUcontext* ctx) {
  log_line("per-thread cuStreamGetCtx_ptsz");
  return cuStreamGetCtx(s, ctx);
}

CUresult CUDAAPI cuLaunchKernelEx_ptsz(const CUlaunchConfig* config, CUfunction f, void** params,
                                       void** extra) {
  log_line("per-thread cuLaunchKernelEx_ptsz");
  return cuLaunchKernelEx(config, f, params, extra);
}

CUresult CUDAAPI cuLaunchHostFunc_ptsz(CUstream s, CUhostFn fn, void* data) {
  log_line("per-thread cuLaunchHostFunc_ptsz");
  return cuLaunchHostFunc(s, fn, data);
}

CUresult CUDAAPI cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr dst, const void* src, size_t n, CUstream s) {
  log_line("per-thread cuMemcpyHtoDAsync_v2_ptsz");
  return cuMemcpyHtoDAsync_v2(dst, src, n, s);
}

CUresult CUDAAPI cuMemcpyDtoHAsync_v2_ptsz(void* dst, CUdeviceptr src, size_t n, CUstream s) {
  log_line("per-thread cuMemcpyDtoHAsync_v2_ptsz");
  return cuMemcpyDtoHAsync_v2(dst, src, n, s);
}

CUresult CUDAAPI cuMemcpyDtoD_v2_ptds(CUdeviceptr dst, CUdeviceptr src, size_t n) {
  log_line("per-thread cuMemcpyDtoD_v2_ptds");
  return cuMemcpyDtoD_v2(dst, src, n);
}

CUresult CUDAAPI cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream s) {
  log_line("per-thread cuMemcpyDtoDAsync_v2_ptsz");
  return cuMemcpyDtoDAsync_v2(dst, src, n, s);
}

CUresult CUDAAPI cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D* copy) {
  log_line("per-thread cuMemcpy2D_v2_ptds");
  return cuMemcpy2D_v2(copy);
}

CUresult CUDAAPI cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D* copy, CUstream s) {
  log_line("per-thread cuMemcpy2DAsync_v2_ptsz");
  return cuMemcpy2DAsync_v2(copy, s);
}

}  // extern "C"
