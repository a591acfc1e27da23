"""One model's training step on the current CUDA device, as one JSON line:
the first step (module loads included), then the median of steady steps,
and, through scuda, the replies the client waited for per steady step and
in the first step (by function when scuda's stats are on).
Usage: step_time.py mlp|resnet18|resnet50 [--steps N] [--warmup N]"""
import argparse
import ctypes
import json
import statistics
import tempfile
import time

import torch


def mlp():
    layers = []
    for _ in range(4):
        layers += [torch.nn.Linear(4096, 4096), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(4096, 10))
    return model, torch.randn(256, 4096), torch.randint(0, 10, (256,))


def resnet(name, batch):
    import torchvision
    model = getattr(torchvision.models, name)(weights=None)
    return model, torch.randn(batch, 3, 224, 224), torch.randint(0, 1000, (batch,))


MODELS = {"mlp": mlp, "resnet18": lambda: resnet("resnet18", 32),
          "resnet50": lambda: resnet("resnet50", 64)}


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
    loss_fn = torch.nn.CrossEntropyLoss()
    replies = scuda_function("scuda_replies_awaited", ctypes.c_uint64)
    write_stats = scuda_function("scuda_stats_write", ctypes.c_int)

    def step():
        start = time.perf_counter()
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
        torch.cuda.synchronize()
        return (time.perf_counter() - start) * 1e3

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
