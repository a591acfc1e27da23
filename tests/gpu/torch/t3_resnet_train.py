#!/usr/bin/env python3
"""t3: torchvision resnet18 (random init) trains 20 SGD steps (momentum 0.9,
lr 0.01) on a seeded batch of 32x3x224x224, cudnn deterministic, no benchmark.
Prints the losses. Compare: relative difference <= 1e-5 (expect exact).
The training itself is common.resnet_train, shared with t7."""
import os
import sys

os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"  # before torch is imported
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

if __name__ == "__main__":
    common.main("t3_resnet_train", common.resnet_train)
