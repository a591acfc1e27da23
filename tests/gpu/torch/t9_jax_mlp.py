#!/usr/bin/env python3
"""t9: JAX (XLA) jit-trains an MLP 64-256-256-10 with optax Adam, 30 steps,
full batch, on fixed random data made by NumPy on the CPU. The first layer
runs in bfloat16 with float32 accumulation (mixed precision), so XLA fuses
the converts into a Triton gemm fusion and autotunes it (loads many
gemm_fusion_dot_N candidates; this once failed through scuda with
CUDA_ERROR_INVALID_HANDLE). Prints the 30 losses.

XLA_FLAGS adds --xla_gpu_deterministic_ops=true; autotuning stays on, and
the persistent compilation cache is a fresh folder, so each run autotunes
itself. Compare: relative difference <= 1e-4: autotuning picks kernels by
timing, so the native run and the scuda run may use different (each
deterministic) gemm tilings, whose sums round differently."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

common.jax_env()  # before jax is imported

NAME = "t9_jax_mlp"
try:
    import numpy as np
    import jax
    import jax.numpy as jnp
    import optax
except Exception as e:  # noqa: BLE001
    common.fail(NAME, e)

STEPS = 30
SIZES = (64, 256, 256, 10)
BATCH = 256


def init_params(rng):
    """He-initialised weights and zero biases, on the CPU (NumPy)."""
    params = []
    for n_in, n_out in zip(SIZES[:-1], SIZES[1:]):
        w = rng.standard_normal((n_in, n_out), dtype=np.float32) * np.float32(np.sqrt(2.0 / n_in))
        params.append({"w": w, "b": np.zeros(n_out, np.float32)})
    return params


def forward(params, x):
    first, *rest = params
    h = jnp.dot(x.astype(jnp.bfloat16), first["w"].astype(jnp.bfloat16),
                preferred_element_type=jnp.float32) + first["b"]
    for layer in rest:
        h = jnp.dot(jax.nn.relu(h), layer["w"]) + layer["b"]
    return h


def make_step(tx):
    def loss_fn(params, x, y):
        return optax.softmax_cross_entropy_with_integer_labels(forward(params, x), y).mean()

    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return step


def report_gemms(compiled):
    """To stderr: how XLA emitted the dots (after autotuning)."""
    try:
        text = compiled.as_text()
    except Exception as e:  # noqa: BLE001 - diagnostics only
        text = f"(as_text failed: {e})"
    kinds = {k: text.count(k) for k in ("__triton_gemm", "gemm_fusion", "__cublas$gemm",
                                        "__cublas$lt$matmul")}
    print(f"{NAME}: dots in the compiled module: {kinds}", file=sys.stderr)


def run(check):
    dev = common.jax_gpu(check)
    rng = np.random.default_rng(0)
    params = init_params(rng)
    x = rng.standard_normal((BATCH, SIZES[0]), dtype=np.float32)
    y = rng.integers(0, SIZES[-1], BATCH).astype(np.int32)
    params, x, y = jax.device_put((params, x, y), dev)
    tx = optax.adam(1e-3)
    opt_state = tx.init(params)
    compiled = jax.jit(make_step(tx)).lower(params, opt_state, x, y).compile()  # autotunes
    report_gemms(compiled)
    (params, _), losses = common.jax_train(compiled, (params, opt_state), (x, y), STEPS)
    check(len(losses) == STEPS and common.finite(losses), f"losses finite: {losses}")
    check(common.trend_down(losses), f"loss goes down: {losses[:3]} ... {losses[-3:]}")
    return {"platform": dev.platform, "device_kind": dev.device_kind,
            "losses": common.hexlist(losses), "param_abs_sum": common.fhex(common.tree_abs_sum(params))}


if __name__ == "__main__":
    common.main(NAME, run)
