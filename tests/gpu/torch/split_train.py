#!/usr/bin/env python3
"""split_train: one model split across two GPUs (its first half on cuda:0,
its second on cuda:1), trained for STEPS steps, so that every step copies
activations from device 0 to device 1 and gradients back. Not part of
run.sh: it needs two devices; tests/gpu/multi_gpu.sh runs it natively and
through two scuda servers of one GPU each, where the copies go between
servers.

Prints, as the last line,
    RESULT split_train {json}
with every step's loss (float.hex, exact), the parameters' checksum, the
median step time after the warm-up, and the bandwidth of a 256 MiB copy
from device 0 to device 1. Exit code 0 only if every loss is finite."""
import json
import math
import statistics
import sys
import time

import torch

STEPS, WARMUP, BATCH, WIDTH = 20, 5, 256, 2048
COPY_BYTES = 256 << 20


def half(first):
    torch.manual_seed(0 if first else 1)
    n_in = 1024 if first else WIDTH
    layers = [torch.nn.Linear(n_in, WIDTH), torch.nn.ReLU(), torch.nn.Linear(WIDTH, WIDTH),
              torch.nn.ReLU()]
    if not first:
        layers.append(torch.nn.Linear(WIDTH, 10))
    return torch.nn.Sequential(*layers).to(f"cuda:{0 if first else 1}")


def copy_gbps():
    src = torch.empty(COPY_BYTES, dtype=torch.uint8, device="cuda:0").fill_(7)
    dst = torch.empty(COPY_BYTES, dtype=torch.uint8, device="cuda:1")
    dst.copy_(src)
    torch.cuda.synchronize(0)
    torch.cuda.synchronize(1)
    times = []
    for _ in range(5):
        start = time.perf_counter()
        dst.copy_(src)
        torch.cuda.synchronize(0)
        torch.cuda.synchronize(1)
        times.append(time.perf_counter() - start)
    assert int(dst[COPY_BYTES - 1].item()) == 7
    return COPY_BYTES / statistics.median(times) / 1e9


def main():
    torch.backends.cudnn.benchmark = False
    torch.use_deterministic_algorithms(True)
    a, b = half(True), half(False)
    opt = torch.optim.SGD(list(a.parameters()) + list(b.parameters()), lr=0.01, momentum=0.9)
    g = torch.Generator().manual_seed(5)
    xs = torch.randn(STEPS, BATCH, 1024, generator=g).to("cuda:0")
    ys = torch.randint(0, 10, (STEPS, BATCH), generator=g).to("cuda:1")
    losses, times = [], []
    for step in range(STEPS):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(b(a(xs[step]).to("cuda:1")), ys[step])
        loss.backward()
        opt.step()
        losses.append(loss.item())
        times.append(time.perf_counter() - start)
    total = sum(p.detach().double().sum().item() for p in [*a.parameters(), *b.parameters()])
    result = {"devices": torch.cuda.device_count(), "losses": [x.hex() for x in losses],
              "params": total.hex(), "step_ms": round(statistics.median(times[WARMUP:]) * 1e3, 3),
              "copy_gbps": round(copy_gbps(), 2)}
    print(f"# losses {losses[0]:.6f} .. {losses[-1]:.6f}, step {result['step_ms']} ms, "
          f"copy 0->1 {result['copy_gbps']} GB/s")
    print("RESULT split_train " + json.dumps(result), flush=True)
    return 0 if all(math.isfinite(x) for x in losses) else 1


if __name__ == "__main__":
    sys.exit(main())
