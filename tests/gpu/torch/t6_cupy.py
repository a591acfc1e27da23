#!/usr/bin/env python3
"""t6: CuPy: an ElementwiseKernel, a RawKernel (CUDA C compiled by NVRTC), a
512x512 float32 matmul (cuBLAS) and a sum reduction, each checked against
NumPy. Prints checksums. Compare: relative difference <= 1e-5.
CuPy's kernel cache points at a fresh temporary folder so that each run
compiles and loads its own kernels."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

common.fresh_cache_dir("CUPY_CACHE_DIR")

try:
    import numpy as np
except ImportError as e:
    common.fail("t6_cupy", e)

N = 1 << 20

SAXPY = r"""
extern "C" __global__ void saxpy(const float a, const float* x, const float* y,
                                 float* out, const unsigned int n) {
  unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a * x[i] + y[i];
}
"""


def host_sum(a):
    return float(np.asarray(a, dtype=np.float64).sum())


def run(check):
    import cupy as cp
    check(cp.cuda.runtime.getDeviceCount() >= 1, "cupy sees a device")
    name = cp.cuda.runtime.getDeviceProperties(0)["name"]
    name = name.decode() if isinstance(name, bytes) else str(name)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N, dtype=np.float32)
    y = rng.standard_normal(N, dtype=np.float32)
    u = rng.random(N, dtype=np.float32)  # positive: a well-conditioned sum
    A = rng.standard_normal((512, 512), dtype=np.float32)
    B = rng.standard_normal((512, 512), dtype=np.float32)
    dx, dy, du, dA, dB = (cp.asarray(v) for v in (x, y, u, A, B))

    ek = cp.ElementwiseKernel("float32 x, float32 y", "float32 z",
                              "z = x * y + 2.0f * x", "scuda_t6_elementwise")
    z = cp.asnumpy(ek(dx, dy))
    ez = x * y + np.float32(2) * x
    check(np.allclose(z, ez, rtol=1e-6, atol=1e-6),
          f"elementwise: max abs error {np.abs(z - ez).max()}")

    saxpy = cp.RawKernel(SAXPY, "saxpy")
    dout = cp.empty_like(dx)
    saxpy(((N + 255) // 256,), (256,), (np.float32(2.5), dx, dy, dout, np.uint32(N)))
    s = cp.asnumpy(dout)
    es = np.float32(2.5) * x + y
    check(np.allclose(s, es, rtol=1e-6, atol=1e-6),
          f"raw kernel: max abs error {np.abs(s - es).max()}")

    dC = cp.matmul(dA, dB)
    C = cp.asnumpy(dC)
    eC = A.astype(np.float64) @ B.astype(np.float64)
    mm_err = float(np.abs(C - eC).max() / np.abs(eC).max())
    check(mm_err < 1e-4, f"matmul: max error / max value {mm_err:.3g} < 1e-4")

    red = float(cp.sum(du))
    ered = host_sum(u)
    check(abs(red - ered) <= 1e-5 * abs(ered), f"sum: {red} vs numpy {ered}")
    cp.cuda.Device(0).synchronize()

    return {
        "device_name": name,
        "elementwise_sum": common.fhex(host_sum(z)),
        "elementwise_first8": common.hexlist(z[:8]),
        "raw_sum": common.fhex(host_sum(s)),
        "raw_first8": common.hexlist(s[:8]),
        "matmul_sum": common.fhex(host_sum(C)),
        "matmul_abs_sum": common.fhex(float(np.abs(C.astype(np.float64)).sum())),
        "matmul_first8": common.hexlist(C.flatten()[:8]),
        "reduction": common.fhex(red),
    }


if __name__ == "__main__":
    common.main("t6_cupy", run)
