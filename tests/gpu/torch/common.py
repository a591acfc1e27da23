"""Shared pieces of the framework scripts in tests/gpu/torch (issue 4).

Each script puts its own folder on sys.path and imports this module. It does
not import torch at module level, so a script can set environment variables
(CUBLAS_WORKSPACE_CONFIG, PYTORCH_CUDA_ALLOC_CONF, cache folders) before
torch is first imported.

Contract of every script: the last stdout line is exactly
    RESULT <name> {json}
and the exit code is 0 only if the script's own checks passed. Floats in the
json are float.hex() strings (exact), which compare.py reads back.
"""
import contextlib
import json
import math
import os
import random
import shutil
import sys
import tempfile
import traceback
import warnings

SEED = 0


def fhex(x):
    """Exact text of one float (Python float, numpy or 0-d tensor)."""
    return float(x).hex()


def hexlist(xs):
    return [fhex(x) for x in xs]


def finite(xs):
    return all(math.isfinite(float(x)) for x in xs)


class Checks:
    """Collects the script's own checks; failures go to stderr."""

    def __init__(self):
        self.failed = []

    def __call__(self, ok, what):
        ok = bool(ok)
        if not ok:
            self.failed.append(what)
            print(f"CHECK FAILED: {what}", file=sys.stderr, flush=True)
        return ok


def emit(name, values, checks=None):
    """Print the one RESULT line (last on stdout) and exit 0/1."""
    failed = checks.failed if checks is not None else []
    sys.stderr.flush()
    sys.stdout.flush()
    line = json.dumps(values, sort_keys=True, separators=(",", ":"))
    print(f"RESULT {name} {line}", flush=True)
    if failed:
        print(f"{name}: {len(failed)} check(s) failed: " + "; ".join(failed),
              file=sys.stderr, flush=True)
    sys.exit(1 if failed else 0)


def main(name, fn):
    """Run fn(checks) -> dict and emit its RESULT. An exception still ends
    with a RESULT line, {"error": ...}, which compare.py never accepts."""
    checks = Checks()
    try:
        values = fn(checks)
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001 - report anything, then fail
        fail(name, e)
    emit(name, values, checks)


def fail(name, e):
    """Print the traceback of e, a RESULT line {"error": ...}, exit 1. For
    imports at module level too (try: import triton / except: fail)."""
    traceback.print_exception(e)
    msg = error_text(e)
    sys.stderr.flush()
    sys.stdout.flush()
    print(f"RESULT {name} " + json.dumps({"error": msg}), flush=True)
    sys.exit(1)


def error_text(e):
    """One line for an exception, as RESULT lines carry it."""
    return f"{type(e).__name__}: {e}".splitlines()[0][:200] if str(e) else type(e).__name__


def section(check, name, fn, *args):
    """fn(check, *args), or {"error": ...} and a failed check if it raises:
    one part of a script fails on its own while the others still run. Each
    part's start and end go to stderr, so that a crash (which prints no
    RESULT) still says which part it was in."""
    print(f"section {name}: start", file=sys.stderr, flush=True)
    try:
        result = fn(check, *args)
        print(f"section {name}: done", file=sys.stderr, flush=True)
        return result
    except Exception as e:  # noqa: BLE001 - record, go on with the next part
        traceback.print_exc()
        msg = error_text(e)
        check(False, f"{name}: {msg}")
        print(f"section {name}: failed", file=sys.stderr, flush=True)
        return {"error": msg}


def fresh_cache_dir(var):
    """Point cache env var VAR at a new temporary folder (removed at exit), so
    every run compiles its kernels itself instead of reusing the other run's."""
    import atexit
    d = tempfile.mkdtemp(prefix=f"scuda-{var.lower()}-")
    os.environ[var] = d
    atexit.register(shutil.rmtree, d, True)
    return d


def setup(seed=SEED, deterministic=True, warn_only=False):
    """Import torch, seed everything, and ask for deterministic kernels.
    The caller must already have set CUBLAS_WORKSPACE_CONFIG (before torch
    was imported anywhere)."""
    if deterministic and os.environ.get("CUBLAS_WORKSPACE_CONFIG") != ":4096:8":
        raise RuntimeError("set CUBLAS_WORKSPACE_CONFIG=:4096:8 before importing torch")
    import torch
    random.seed(seed)
    try:
        import numpy
        numpy.random.seed(seed)
    except ImportError:
        pass
    torch.manual_seed(seed)  # CPU and every CUDA device
    if deterministic:
        torch.use_deterministic_algorithms(True, warn_only=warn_only)
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
    if not torch.cuda.is_available():
        raise RuntimeError("torch.cuda.is_available() is False")
    return torch


def cpu_generator(seed=1):
    """Data comes from a CPU generator, so it does not depend on the GPU."""
    import torch
    return torch.Generator().manual_seed(seed)


@contextlib.contextmanager
def nondeterministic_ops():
    """Collect torch's "does not have a deterministic implementation" alerts
    (with use_deterministic_algorithms(True, warn_only=True)) as a sorted,
    de-duplicated list of op names; every other warning is printed as usual."""
    found = set()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        yield found
    for w in caught:
        text = str(w.message)
        if "deterministic implementation" in text:
            found.add(text.split(" does not have")[0].strip()[:120])
        else:
            print(warnings.formatwarning(w.message, w.category, w.filename, w.lineno),
                  end="", file=sys.stderr)


def trend_down(losses, n=5):
    """The mean of the last n losses is below the mean of the first n."""
    n = min(n, len(losses) // 2) or 1
    return sum(losses[-n:]) / n < sum(losses[:n]) / n


def resnet_train(checks, steps=20, batch=32):
    """t3/t7: torchvision resnet18 (random init), SGD momentum 0.9 lr 0.01 on
    one seeded random batch. Returns the RESULT values."""
    torch = setup(warn_only=True)  # max_pool2d backward has no deterministic kernel
    import torchvision
    model = torchvision.models.resnet18(weights=None)  # init on the CPU, seeded
    model = model.cuda().train()
    g = cpu_generator()
    x = torch.randn(batch, 3, 224, 224, generator=g).cuda()
    y = torch.randint(0, 1000, (batch,), generator=g).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    lossf = torch.nn.CrossEntropyLoss()
    losses = []
    with nondeterministic_ops() as nd:
        for _ in range(steps):
            opt.zero_grad(set_to_none=True)
            loss = lossf(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        losses = torch.stack(losses).cpu().tolist()
    checks(len(losses) == steps and finite(losses), f"losses finite: {losses}")
    checks(trend_down(losses), f"loss goes down: {losses[:3]} ... {losses[-3:]}")
    param_sum = sum(float(p.detach().double().sum()) for p in model.parameters())
    return {"losses": hexlist(losses), "param_sum": fhex(param_sum),
            "nondeterministic_ops": sorted(nd)}


def jax_env():
    """t9/t10, before jax is imported: no preallocation of most of the GPU's
    memory, deterministic XLA kernels (--xla_gpu_deterministic_ops=true) and a
    fresh persistent compilation cache, so each run compiles (and autotunes)
    its own kernels. Autotuning stays on (XLA's default level)."""
    os.environ["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"
    flags = os.environ.get("XLA_FLAGS", "")
    os.environ["XLA_FLAGS"] = (flags + " --xla_gpu_deterministic_ops=true").strip()
    fresh_cache_dir("JAX_COMPILATION_CACHE_DIR")


def jax_gpu(check):
    """The first JAX device, checked to be a GPU; and checked that nothing in
    XLA_FLAGS turned autotuning off."""
    import re
    import jax
    dev = jax.devices()[0]
    check(dev.platform == "gpu", f"jax.devices()[0].platform is {dev.platform!r}, not 'gpu'")
    flags = os.environ.get("XLA_FLAGS", "")
    check(not re.search(r"--xla_gpu_autotune_level=0\b", flags), f"autotuning on: XLA_FLAGS={flags}")
    return dev


def jax_train(step, carry, batch, steps):
    """Runs carry, loss = step(*carry, *batch) `steps` times; returns the last
    carry and the losses as Python floats (fetched once, at the end)."""
    import jax
    import jax.numpy as jnp
    losses = []
    for _ in range(steps):
        *carry, loss = step(*carry, *batch)
        losses.append(loss)
    return carry, [float(v) for v in jax.device_get(jnp.stack(losses))]


def tree_abs_sum(tree):
    """Sum of |x| over every leaf of a JAX pytree, in float64 on the host."""
    import jax
    import numpy as np
    return sum(float(np.abs(np.asarray(leaf, dtype=np.float64)).sum())
               for leaf in jax.tree_util.tree_leaves(jax.device_get(tree)))
