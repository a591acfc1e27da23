#!/usr/bin/env python3
"""t2: seeded, deterministic MLP 512-1024-1024-10 (ReLU), Adam lr 1e-3, 200
full-batch steps on seeded random data. Prints all 200 losses. Compare: exact."""
import os
import sys

os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"  # before torch is imported
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

STEPS = 200


def run(check):
    # warn_only: an op without a deterministic kernel would be named in the
    # RESULT (nondeterministic_ops) instead of stopping the script.
    torch = common.setup(warn_only=True)
    nn = torch.nn
    model = nn.Sequential(nn.Linear(512, 1024), nn.ReLU(), nn.Linear(1024, 1024),
                          nn.ReLU(), nn.Linear(1024, 10))  # init on the CPU, seeded
    model = model.cuda()
    g = common.cpu_generator()
    x = torch.randn(256, 512, generator=g).cuda()
    y = torch.randint(0, 10, (256,), generator=g).cuda()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    lossf = nn.CrossEntropyLoss()
    losses = []
    with common.nondeterministic_ops() as nd:
        for _ in range(STEPS):
            opt.zero_grad(set_to_none=True)
            loss = lossf(model(x), y)
            loss.backward()
            opt.step()
            losses.append(loss.detach())
        losses = torch.stack(losses).cpu().tolist()
    check(len(losses) == STEPS and common.finite(losses), "losses finite")
    check(losses[-1] < 0.5 * losses[0], f"loss halves: {losses[0]} -> {losses[-1]}")
    return {"losses": common.hexlist(losses), "nondeterministic_ops": sorted(nd)}


if __name__ == "__main__":
    common.main("t2_mlp_adam", run)
