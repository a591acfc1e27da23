#!/usr/bin/env python3
"""t7: t3's resnet18 training with PyTorch's expandable segments allocator
(cuMemCreate/cuMemMap/cuMemAddressReserve: the driver's virtual memory API).
Compare: as t3 (relative difference <= 1e-5); the losses should also equal t3's."""
import os
import sys

os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"  # before torch is imported
os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def run(check):
    values = common.resnet_train(check)
    import torch
    segs = torch.cuda.memory_snapshot()
    flags = [s.get("is_expandable") for s in segs if "is_expandable" in s]
    # None: this torch's snapshot does not say; else some segment must be expandable
    expandable = any(flags) if flags else None
    check(expandable is not False, f"segments expandable: {flags}")
    values["expandable_segments"] = expandable
    return values


if __name__ == "__main__":
    common.main("t7_expandable", run)
