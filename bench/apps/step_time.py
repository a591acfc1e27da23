"""One model's training step on the current CUDA device, as one JSON line:
the first step (module loads included), then the median of steady steps,
and, through scuda, the replies the client waited for per steady step and
in the first step (by function when scuda's stats are on). The *-graph
models capture their whole training step as one CUDA graph and time its
replays, ten to a synchronization.
Usage: step_time.py MODEL [--steps N] [--warmup N]"""
import argparse
import ctypes
import json
import statistics
import tempfile
import time

import torch


def mlp(width=4096, depth=4, batch=256):
    layers = []
    for _ in range(depth):
        layers += [torch.nn.Linear(width, width), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(width, 10))
    return model, torch.randn(batch, width), torch.randint(0, 10, (batch,))


def resnet(name, batch):
    import torchvision
    model = getattr(torchvision.models, name)(weights=None)
    return model, torch.randn(batch, 3, 224, 224), torch.randint(0, 1000, (batch,))


class Attention(torch.nn.Module):
    """One self-attention block through scaled_dot_product_attention."""

    def __init__(self, dim=512, heads=8):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.out = torch.nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        y = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(y.transpose(1, 2).reshape(b, t, d))


def sdpa():
    return Attention(), torch.randn(8, 128, 512), torch.randn(8, 128, 512)


MODELS = {"mlp": mlp, "resnet18": lambda: resnet("resnet18", 32),
          "resnet50": lambda: resnet("resnet50", 64), "mlp-graph": lambda: mlp(1024, 3, 64),
          "sdpa-graph": sdpa}
REPLAYS = 10  # graph replays per timed step


def captured(train_step):
    """train_step captured as a CUDA graph (after warm-up on a side stream,
    as PyTorch's whole-network capture asks), as a function that replays it."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            train_step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        train_step()

    def replay():
        for _ in range(REPLAYS):
            graph.replay()
    return replay


def scuda_function(name, restype):
    """One of scuda's benchmark hooks, or None natively."""
    try:
        fn = getattr(ctypes.CDLL("libcuda.so.1"), name)
    except (OSError, AttributeError):
        return None
    fn.restype = restype
    return fn


def round_trips_by_function(write):
    """scuda's round trips so far by function, or None with stats off."""
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        if write(f.name.encode()) != 0:
            return None
        return {r["function"]: r["round_trips"] for r in json.load(open(f.name))}


def first_step_waits(before, after):
    """The functions that waited in the first step, most first."""
    waits = {k: v - before.get(k, 0) for k, v in after.items() if v > before.get(k, 0)}
    return dict(sorted(waits.items(), key=lambda kv: -kv[1]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model", choices=sorted(MODELS))
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()
    torch.manual_seed(0)
    model, x, y = MODELS[args.model]()
    model, x, y = model.cuda(), x.cuda(), y.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    loss_fn = torch.nn.MSELoss() if args.model == "sdpa-graph" else torch.nn.CrossEntropyLoss()
    replies = scuda_function("scuda_replies_awaited", ctypes.c_uint64)
    write_stats = scuda_function("scuda_stats_write", ctypes.c_int)

    def train_step():
        optimizer.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        optimizer.step()

    graphed = args.model.endswith("-graph")
    work = captured(train_step) if graphed else train_step

    def step():
        start = time.perf_counter()
        work()
        torch.cuda.synchronize()
        return (time.perf_counter() - start) * 1e3 / (REPLAYS if graphed else 1)

    waits = round_trips_by_function(write_stats) if write_stats else None
    first_replies = replies() if replies else None
    first = step()
    if replies:
        first_replies = replies() - first_replies
    if waits is not None:
        waits = first_step_waits(waits, round_trips_by_function(write_stats))
    for _ in range(args.warmup):
        step()
    before = replies() if replies else None
    times = [step() for _ in range(args.steps)]
    result = {"model": args.model, "first_step_ms": round(first, 3),
              "step_ms": round(statistics.median(times), 3), "steps": args.steps,
              "device": torch.cuda.get_device_name()}
    if replies:
        result["replies_per_step"] = (replies() - before) / args.steps
        result["first_step_replies"] = first_replies
    if waits is not None:
        result["first_step_waits"] = waits
    print(json.dumps(result))


if __name__ == "__main__":
    main()
