"""Median milliseconds per training step of one model on the current CUDA
device, as one JSON line. Usage: step_time.py mlp|resnet50 [--steps N]"""
import argparse
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


def resnet50():
    import torchvision
    model = torchvision.models.resnet50()
    return model, torch.randn(64, 3, 224, 224), torch.randint(0, 1000, (64,))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model", choices=["mlp", "resnet50"])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=10)
    args = parser.parse_args()
    model, x, y = {"mlp": mlp, "resnet50": resnet50}[args.model]()
    model, x, y = model.cuda(), x.cuda(), y.cuda()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    times = []
    for step in range(args.warmup + args.steps):
        start = time.perf_counter()
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()
        torch.cuda.synchronize()
        if step >= args.warmup:
            times.append((time.perf_counter() - start) * 1e3)
    print(json.dumps({"model": args.model, "step_ms": statistics.median(times),
                      "steps": args.steps, "device": torch.cuda.get_device_name()}))


if __name__ == "__main__":
    main()
