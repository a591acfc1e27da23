#!/usr/bin/env python3
"""t4: torchvision resnet18 (random init) inference, eval + no_grad, on a
seeded batch of 8: in fp32 and under torch.autocast float16 and bfloat16.
A checksum per mode (sum, abs-sum, first 8 values). Compare: exact."""
import os
import sys

os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"  # before torch is imported
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

# Allowed ||out - out_fp32|| / ||out_fp32|| per mode (a sanity bound only).
TOL = {"fp32": 0.0, "fp16": 0.05, "bf16": 0.15}


def run(check):
    torch = common.setup(warn_only=True)
    import torchvision
    model = torchvision.models.resnet18(weights=None).cuda().eval()  # seeded init
    x = torch.randn(8, 3, 224, 224, generator=common.cpu_generator()).cuda()
    modes = {"fp32": None, "fp16": torch.float16, "bf16": torch.bfloat16}
    outs, values = {}, {}
    with torch.no_grad():
        for mode, dtype in modes.items():
            if dtype is None:
                out = model(x)
            else:
                with torch.autocast("cuda", dtype=dtype):
                    out = model(x)
            check(out.shape == (8, 1000), f"{mode}: shape {tuple(out.shape)}")
            check(dtype is None or out.dtype == dtype, f"{mode}: dtype {out.dtype}")
            o = out.float().cpu().double()  # exact: fp16/bf16/fp32 -> float64
            outs[mode] = o
            values[mode] = {
                "sum": common.fhex(o.sum()),
                "abs_sum": common.fhex(o.abs().sum()),
                "first8": common.hexlist(o.flatten()[:8].tolist()),
                "gpu_sum": common.fhex(out.float().sum()),
            }
            check(bool(torch.isfinite(o).all()), f"{mode}: outputs finite")
    ref = outs["fp32"]
    for mode in ("fp16", "bf16"):
        rel = float((outs[mode] - ref).norm() / ref.norm())
        values[mode]["rel_to_fp32"] = common.fhex(rel)
        check(rel <= TOL[mode], f"{mode}: relative L2 difference to fp32 {rel:.3g} <= {TOL[mode]}")
    return values


if __name__ == "__main__":
    common.main("t4_resnet_infer", run)
