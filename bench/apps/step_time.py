"""One model's training step on the current CUDA device, as one JSON line:
the first step (module loads included), then the median of steady steps,
and, through scuda, the replies the client waited for per steady step.
Usage: step_time.py mlp|resnet18|resnet50 [--steps N] [--warmup N]"""
import argparse
import ctypes
import json
import statistics
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


def replies_counter():
    """scuda's count of replies waited for, or None natively."""
    try:
        fn = ctypes.CDLL("libcuda.so.1").scuda_replies_awaited
    except (OSError, AttributeError):
        return None
    fn.restype = ctypes.c_uint64
    return fn


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
    replies = replies_counter()

    def step():
        start = time.perf_counter()
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
        torch.cuda.synchronize()
        return (time.perf_counter() - start) * 1e3

    first = step()
    for _ in range(args.warmup):
        step()
    before = replies() if replies else None
    times = [step() for _ in range(args.steps)]
    result = {"model": args.model, "first_step_ms": round(first, 3),
              "step_ms": round(statistics.median(times), 3), "steps": args.steps,
              "device": torch.cuda.get_device_name()}
    if replies:
        result["replies_per_step"] = (replies() - before) / args.steps
    print(json.dumps(result))


if __name__ == "__main__":
    main()
