"""Whether JAX's host-to-device transfers deliver the bytes: NumPy arrays of
several sizes and dtypes go to the GPU with jax.device_put, a kernel sums
them there, and they come back; one line per array says whether the sum and
the round trip match NumPy's. Run natively and through scuda (trace.sh)."""
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

rng = np.random.default_rng(0)
ok = True
for n, dtype in [(10, np.float32), (1000, np.float32), (64 * 256, np.float32),
                 (1 << 20, np.float32), (1000, np.int32), (1000, jnp.bfloat16)]:
    host = rng.standard_normal(n).astype(dtype)
    dev = jax.device_put(host)
    total = float(jnp.sum(dev.astype(jnp.float32)))
    back = np.asarray(dev)
    want = float(host.astype(np.float32).sum())
    same = bool(np.array_equal(back, host))
    close = abs(total - want) <= 1e-3 * max(1.0, abs(want))
    ok &= same and close
    print(f"{n} {np.dtype(dtype).name}: device sum {total!r} host sum {want!r} round trip "
          f"{'same' if same else 'DIFFERS'}", flush=True)
print(f"RESULT jax_transfer {'PASS' if ok else 'FAIL'}")
