#!/usr/bin/env python3
"""t5: torch.compile (inductor: generated Triton kernels, cuBLAS for the
matmuls) trains a small MLP 20 steps; and a hand-written @triton.jit vector
add on 98432 elements must equal torch's a + b exactly.
Compare: relative difference <= 1e-5.

Nothing here tells Triton where libcuda is: `scuda run` must make that work.
The inductor and Triton caches point at fresh temporary folders so that each
run (native, scuda) compiles and loads its own kernels."""
import os
import sys

os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"  # before torch is imported
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

common.fresh_cache_dir("TORCHINDUCTOR_CACHE_DIR")
common.fresh_cache_dir("TRITON_CACHE_DIR")

NAME = "t5_compile_triton"
try:
    import triton
    import triton.language as tl
except Exception as e:  # noqa: BLE001
    common.fail(NAME, e)

STEPS = 20
N = 98432


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(axis=0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


def compiled_training(torch, check):
    nn, F = torch.nn, torch.nn.functional
    model = nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512),
                          nn.ReLU(), nn.Linear(512, 10)).cuda()  # seeded CPU init

    def loss_fn(x, y):
        return F.cross_entropy(model(x), y)

    closs = torch.compile(loss_fn)
    g = common.cpu_generator()
    x = torch.randn(128, 256, generator=g).cuda()
    y = torch.randint(0, 10, (128,), generator=g).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    losses = []
    with common.nondeterministic_ops() as nd:
        for _ in range(STEPS):
            opt.zero_grad(set_to_none=True)
            loss = closs(x, y)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        losses = torch.stack(losses).cpu().tolist()
    check(len(losses) == STEPS and common.finite(losses), "compiled losses finite")
    check(common.trend_down(losses), f"compiled loss goes down: {losses[0]} -> {losses[-1]}")
    try:
        import torch._inductor.metrics as metrics
        kernels = int(metrics.generated_kernel_count)
    except (ImportError, AttributeError):
        kernels = None
    print(f"t5: inductor generated kernels: {kernels}", file=sys.stderr)
    return {"losses": common.hexlist(losses), "nondeterministic_ops": sorted(nd),
            "inductor_kernels": kernels}


def triton_add(torch, check):
    g = common.cpu_generator(2)
    a = torch.rand(N, generator=g).cuda()
    b = torch.rand(N, generator=g).cuda()
    out = torch.empty_like(a)
    grid = lambda meta: (triton.cdiv(N, meta["BLOCK"]),)  # noqa: E731
    add_kernel[grid](a, b, out, N, BLOCK=1024)
    ref = a + b
    err = float((out - ref).abs().max())
    check(err == 0.0, f"triton add: max abs error {err} == 0")
    return {"n": N, "max_abs_err": common.fhex(err),
            "sum": common.fhex(out.double().sum()), "first8": common.hexlist(out[:8].tolist())}


def run(check):
    torch = common.setup(warn_only=True)
    return {"compiled": compiled_training(torch, check), "triton_add": triton_add(torch, check)}


if __name__ == "__main__":
    common.main(NAME, run)
