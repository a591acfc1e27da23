#!/usr/bin/env python3
"""t12: GPU code compiled at run time, three ways.
  numba.cuda.jit: saxpy, and a block sum through shared memory (tree
    reduction, one partial sum per block), checked against NumPy;
  CuPy: a RawKernel, and a RawModule holding two kernels (an extern "C" one
    and a template instance found by its name expression), against NumPy;
  torch.compile of an MLP training step (loss, backward, Adam; 10 steps) in
    the modes "default", "reduce-overhead" (CUDA graphs: no cudagraph may be
    skipped) and "max-autotune-no-cudagraphs" (benchmarks Triton templates
    against cuBLAS), each from the same seeded initial weights.
Prints checksums and the losses; a part that raises gives {"error": ...}
(and a failed check) while the others still run.

numba finds libcuda by itself: it tries dlopen("libcuda.so") and then
"libcuda.so.1", and `scuda run` puts its library folder, which holds both
names of the stand-in, first on LD_LIBRARY_PATH (NUMBA_CUDA_DRIVER is left
as the caller set it). The script checks that only one libcuda file is
mapped into the process, so that numba did not load a second driver beside
the one torch and CuPy use. The numba, CuPy, inductor and Triton caches are
fresh temporary folders, so each run compiles and loads its own kernels.

Compare: relative difference <= 1e-4: inductor autotunes its kernels by
timing (max-autotune picks among Triton and cuBLAS matmuls), so the two runs
may use different kernels whose sums round differently; the numba and CuPy
results are deterministic."""
import os
import sys

os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"  # before torch is imported
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

for var in ("NUMBA_CACHE_DIR", "CUPY_CACHE_DIR", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"):
    common.fresh_cache_dir(var)

NAME = "t12_numba_compile"
try:
    import numpy as np
    # numba-cuda 0.x registers an overload for np.row_stack, which NumPy 2.4
    # removed: its CUDA target fails to import on the GPU host, natively too.
    # vstack is what row_stack was an alias of.
    if not hasattr(np, "row_stack"):
        np.row_stack = np.vstack
    from numba import cuda, float32
except Exception as e:  # noqa: BLE001
    common.fail(NAME, e)

N = 100_000
TPB = 256  # threads per block of the numba kernels
STEPS = 10
MODES = ("default", "reduce-overhead", "max-autotune-no-cudagraphs")


# -------------------------------------------------------------------- numba
@cuda.jit
def nb_saxpy(a, x, y, out):
    i = cuda.grid(1)
    if i < out.size:
        out[i] = a * x[i] + y[i]


@cuda.jit
def nb_block_sum(x, partial):
    buf = cuda.shared.array(TPB, float32)
    t = cuda.threadIdx.x
    i = cuda.grid(1)
    v = float32(0.0)
    if i < x.size:
        v = x[i]
    buf[t] = v
    cuda.syncthreads()
    s = TPB // 2
    while s > 0:
        if t < s:
            buf[t] += buf[t + s]
        cuda.syncthreads()
        s //= 2
    if t == 0:
        partial[cuda.blockIdx.x] = buf[0]


def libcuda_files():
    """The libcuda files mapped into this process (real paths)."""
    with open("/proc/self/maps") as f:
        paths = {parts[5].strip() for parts in (line.split(None, 5) for line in f) if len(parts) == 6}
    return sorted(p for p in paths if os.path.basename(p).startswith("libcuda.so"))


def numba_kernels(check):
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal(N, dtype=np.float32), rng.standard_normal(N, dtype=np.float32)
    blocks = (N + TPB - 1) // TPB
    dx, dy, dout = cuda.to_device(x), cuda.to_device(y), cuda.device_array(N, np.float32)
    nb_saxpy[blocks, TPB](np.float32(2.5), dx, dy, dout)
    out = dout.copy_to_host()
    check(np.allclose(out, np.float32(2.5) * x + y, rtol=1e-6, atol=1e-6), "numba saxpy equals NumPy's")
    dpart = cuda.device_array(blocks, np.float32)
    nb_block_sum[blocks, TPB](dx, dpart)
    part = dpart.copy_to_host()
    want = np.pad(x.astype(np.float64), (0, blocks * TPB - N)).reshape(blocks, TPB).sum(axis=1)
    check(np.allclose(part, want, rtol=1e-5, atol=1e-4),
          f"numba block sums: max error {np.abs(part - want).max():.3g}")
    cuda.synchronize()
    return {"saxpy_sum": common.fhex(out.astype(np.float64).sum()),
            "saxpy_first4": common.hexlist(out[:4]), "blocks": blocks,
            "block_sums_sum": common.fhex(part.astype(np.float64).sum()),
            "block_sums_first4": common.hexlist(part[:4])}


# --------------------------------------------------------------------- CuPy
RAW_KERNEL = r"""
extern "C" __global__ void clip_square(const float* x, float cap, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = fminf(x[i] * x[i], cap);
}
"""

RAW_MODULE = r"""
extern "C" __global__ void row_sums(const float* m, int cols, float* out) {
  float s = 0.0f;  // one thread per row (block), summed in order
  for (int j = 0; j < cols; ++j) s += m[blockIdx.x * cols + j];
  if (threadIdx.x == 0) out[blockIdx.x] = s;
}
template <typename T> __global__ void scale(T* x, T a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}
"""


def cupy_kernels(check):
    import cupy as cp
    rng = np.random.default_rng(1)
    x = rng.standard_normal(N, dtype=np.float32)
    m = rng.standard_normal((300, 200), dtype=np.float32)
    grid = ((N + 255) // 256,)
    dx, dout = cp.asarray(x), cp.empty(N, cp.float32)
    cp.RawKernel(RAW_KERNEL, "clip_square")(grid, (256,), (dx, np.float32(2.0), dout, np.int32(N)))
    clipped = cp.asnumpy(dout)
    check(np.array_equal(clipped, np.minimum(x * x, np.float32(2.0))), "RawKernel clip_square equals NumPy's")
    mod = cp.RawModule(code=RAW_MODULE, name_expressions=["scale<float>"])
    drows = cp.empty(300, cp.float32)
    mod.get_function("row_sums")((300,), (1,), (cp.asarray(m), np.int32(200), drows))
    mod.get_function("scale<float>")(grid, (256,), (dx, np.float32(0.5), np.int32(N)))
    rows, half = cp.asnumpy(drows), cp.asnumpy(dx)
    check(np.allclose(rows, m.astype(np.float64).sum(axis=1), rtol=1e-5, atol=1e-4), "RawModule row_sums")
    check(np.array_equal(half, x * np.float32(0.5)), "RawModule scale<float> equals NumPy's")
    return {"clip_square_sum": common.fhex(clipped.astype(np.float64).sum()),
            "row_sums": common.hexlist(rows[:4]), "row_sums_sum": common.fhex(rows.astype(np.float64).sum()),
            "scale_sum": common.fhex(half.astype(np.float64).sum())}


# ------------------------------------------------------------ torch.compile
def compiled_training(torch, check, mode):
    """STEPS Adam steps of a compiled loss (and its compiled backward)."""
    from torch._dynamo.utils import counters
    nn, F = torch.nn, torch.nn.functional
    torch._dynamo.reset()
    counters.clear()
    torch.manual_seed(0)  # the same initial weights in every mode
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).cuda()
    closs = torch.compile(lambda x, y: F.cross_entropy(model(x), y), mode=mode)
    g = common.cpu_generator()
    x, y = torch.randn(64, 64, generator=g).cuda(), torch.randint(0, 10, (64,), generator=g).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    for _ in range(STEPS):
        torch.compiler.cudagraph_mark_step_begin()  # outputs of the last replay may be reused
        opt.zero_grad(set_to_none=True)
        loss = closs(x, y)
        loss.backward()
        opt.step()
        losses.append(loss.detach().clone())
    losses = torch.stack(losses).cpu().tolist()
    skips = int(counters["inductor"]["cudagraph_skips"])
    check(len(losses) == STEPS and common.finite(losses), f"{mode}: losses finite")
    check(common.trend_down(losses), f"{mode}: loss goes down: {losses[0]} -> {losses[-1]}")
    if mode == "reduce-overhead":
        check(skips == 0, f"{mode}: {skips} graph(s) ran without CUDA graphs")
    return {"losses": common.hexlist(losses), "cudagraph_skips": skips}


def torch_compile(check):
    torch = common.setup(warn_only=True)
    out = {}
    with common.nondeterministic_ops() as nd:
        for mode in MODES:
            out[mode] = compiled_training(torch, check, mode)
    out["nondeterministic_ops"] = sorted(nd)
    return out


def run(check):
    parts = [("numba", numba_kernels), ("cupy", cupy_kernels), ("torch_compile", torch_compile)]
    out = {name: common.section(check, name, fn) for name, fn in parts}
    libs = libcuda_files()  # numba's, CuPy's and torch's driver: one file
    print(f"{NAME}: numba.cuda {getattr(cuda, 'implementation', '?')}, libcuda mapped: {libs}",
          file=sys.stderr)
    check(len(libs) == 1, f"one libcuda file mapped, not {libs}")
    return out


if __name__ == "__main__":
    common.main(NAME, run)
