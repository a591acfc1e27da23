#!/usr/bin/env python3
"""t10: a Flax CNN (conv 16 3x3, avg-pool 2x2, conv 32 3x3, avg-pool 2x2,
dense 10) trains 20 jit steps with optax SGD momentum 0.9 on fixed random
28x28 images (64, NumPy on the CPU; the parameters are initialised on JAX's
CPU device). flax.linen when Flax has it, else flax.nnx. Prints the losses.

XLA keeps its default command-buffer (CUDA graph) settings: the step's
kernels and library calls are captured into CUDA graphs (through scuda this
once crashed right after XLA captured a stream and read a kernel node's
parameters). Average pooling, not max pooling: max-pool's gradient is a
select-and-scatter, which XLA documents as having no deterministic GPU
implementation.

XLA_FLAGS adds --xla_gpu_deterministic_ops=true; autotuning (of the
convolutions and gemms) stays on. Compare: relative difference <= 1e-4:
autotuning picks kernels by timing, so the two runs may use different
(each deterministic) algorithms, whose sums round differently."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

common.jax_env()  # before jax is imported

NAME = "t10_flax_cnn"
try:
    import numpy as np
    import jax
    import optax
    try:
        from flax import linen
        API = "linen"
    except ImportError:
        from flax import nnx
        API = "nnx"
except Exception as e:  # noqa: BLE001
    common.fail(NAME, e)

STEPS = 20
BATCH = 64
CLASSES = 10


def linen_model(x):
    """(apply(params, x), params) of the linen CNN."""
    class CNN(linen.Module):
        @linen.compact
        def __call__(self, x):
            x = linen.avg_pool(linen.relu(linen.Conv(16, (3, 3))(x)), (2, 2), strides=(2, 2))
            x = linen.avg_pool(linen.relu(linen.Conv(32, (3, 3))(x)), (2, 2), strides=(2, 2))
            return linen.Dense(CLASSES)(x.reshape((x.shape[0], -1)))

    model = CNN()
    params = model.init(jax.random.PRNGKey(0), x)["params"]
    return (lambda p, x: model.apply({"params": p}, x)), params


def nnx_model(x):
    """(apply(params, x), params) of the same CNN in nnx (split/merge)."""
    class CNN(nnx.Module):
        def __init__(self, rngs):
            self.conv1 = nnx.Conv(1, 16, (3, 3), rngs=rngs)
            self.conv2 = nnx.Conv(16, 32, (3, 3), rngs=rngs)
            self.dense = nnx.Linear(7 * 7 * 32, CLASSES, rngs=rngs)

        def __call__(self, x):
            x = nnx.avg_pool(nnx.relu(self.conv1(x)), (2, 2), strides=(2, 2))
            x = nnx.avg_pool(nnx.relu(self.conv2(x)), (2, 2), strides=(2, 2))
            return self.dense(x.reshape((x.shape[0], -1)))

    graphdef, params = nnx.split(CNN(nnx.Rngs(0)))
    return (lambda p, x: nnx.merge(graphdef, p)(x)), params


def init_on_cpu(x):
    """Builds the model with its parameters made on JAX's CPU device."""
    build = linen_model if API == "linen" else nnx_model
    try:
        cpu = jax.devices("cpu")[0]
    except RuntimeError:  # no CPU backend: initialise where JAX likes
        return build(x)
    with jax.default_device(cpu):
        return build(jax.device_put(x, cpu))


def make_step(apply, tx):
    def loss_fn(params, x, y):
        logits = apply(params, x)
        return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step)


def run(check):
    dev = common.jax_gpu(check)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((BATCH, 28, 28, 1), dtype=np.float32)
    y = rng.integers(0, CLASSES, BATCH).astype(np.int32)
    apply, params = init_on_cpu(x)
    params, x, y = jax.device_put((params, x, y), dev)
    tx = optax.sgd(learning_rate=0.05, momentum=0.9)
    opt_state = tx.init(params)
    (params, _), losses = common.jax_train(make_step(apply, tx), (params, opt_state), (x, y), STEPS)
    check(len(losses) == STEPS and common.finite(losses), f"losses finite: {losses}")
    check(common.trend_down(losses), f"loss goes down: {losses[:3]} ... {losses[-3:]}")
    return {"platform": dev.platform, "device_kind": dev.device_kind, "flax_api": API,
            "losses": common.hexlist(losses), "param_abs_sum": common.fhex(common.tree_abs_sum(params))}


if __name__ == "__main__":
    common.main(NAME, run)
