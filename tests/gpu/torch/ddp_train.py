#!/usr/bin/env python3
"""ddp_train: data-parallel training on two GPUs with NCCL, started by
    torchrun --standalone --nproc_per_node=2 tests/gpu/torch/ddp_train.py
(not part of run.sh: it needs two GPUs; tests/gpu/multi_gpu.sh runs it).
DDP_BACKEND=gloo trains with gloo instead, whose all-reduce copies the
gradients through host memory.

Each rank trains the same MLP (4 layers of 2048, ~50 MB of gradients, so
that the all-reduce moves real data) on its own deterministic batches for
STEPS steps, reading the loss after each step as a training loop does.
Rank 0 prints, as the last line,
    RESULT ddp_train {json}
with every step's loss (float.hex, exact), the parameters' checksum after
the last step, and the median step time after the warm-up. Exit code 0 only
if both ranks ended with the same parameters (DDP keeps them equal) and
every loss is finite. Two ranks make every sum a + b, so the losses through
scuda must equal the native ones bit for bit."""
import json
import math
import os
import statistics
import sys
import time

os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")  # bootstrap on loopback only

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

STEPS, WARMUP, BATCH, WIDTH = 30, 5, 256, 2048


def model():
    torch.manual_seed(0)
    layers = [torch.nn.Linear(1024, WIDTH), torch.nn.ReLU()]
    for _ in range(3):
        layers += [torch.nn.Linear(WIDTH, WIDTH), torch.nn.ReLU()]
    return torch.nn.Sequential(*layers, torch.nn.Linear(WIDTH, 10))


def batches(rank, device):
    g = torch.Generator().manual_seed(100 + rank)
    xs = torch.randn(STEPS, BATCH, 1024, generator=g)
    ys = torch.randint(0, 10, (STEPS, BATCH), generator=g)
    return xs.to(device), ys.to(device)


def checksum(net):
    return sum(p.detach().double().sum() for p in net.parameters())


def main():
    rank = int(os.environ["RANK"])
    # DDP_DEVICE: the one device every rank uses, for ranks that each see a
    # single GPU (a scuda server each).
    local = int(os.environ.get("DDP_DEVICE", os.environ["LOCAL_RANK"]))
    torch.cuda.set_device(local)
    device = torch.device("cuda", local)
    torch.backends.cudnn.benchmark = False
    torch.use_deterministic_algorithms(True)
    backend = os.environ.get("DDP_BACKEND", "nccl")
    dist.init_process_group(backend, device_id=device if backend == "nccl" else None)
    net = DDP(model().to(device), device_ids=[local])
    opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    xs, ys = batches(rank, device)
    losses, times = [], []
    for step in range(STEPS):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        loss = torch.nn.functional.cross_entropy(net(xs[step]), ys[step])
        loss.backward()
        opt.step()
        losses.append(loss.item())
        times.append(time.perf_counter() - start)
    total = checksum(net.module)
    both = [torch.zeros((), dtype=torch.float64, device=device) for _ in range(2)]
    dist.all_gather(both, total.reshape(()))
    same = both[0].item() == both[1].item()
    ok = same and all(math.isfinite(x) for x in losses)
    if rank == 0:
        result = {"world": dist.get_world_size(), "backend": backend, "losses": [x.hex() for x in losses],
                  "params": total.item().hex(), "same_params": same,
                  "step_ms": round(statistics.median(times[WARMUP:]) * 1e3, 3)}
        print(f"# rank 0 losses {losses[0]:.6f} .. {losses[-1]:.6f}, step {result['step_ms']} ms")
        print("RESULT ddp_train " + json.dumps(result), flush=True)
    dist.destroy_process_group()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
