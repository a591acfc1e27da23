#!/usr/bin/env python3
"""t1: torch sees the GPU: availability, device count, name and properties,
a round trip of zeros, and a little arithmetic. Compare: exact."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402


def run(check):
    torch = common.setup(deterministic=False)
    n = torch.cuda.device_count()
    check(n >= 1, f"device_count {n} >= 1")
    p = torch.cuda.get_device_properties(0)
    props = {
        "name": p.name,
        "total_memory": p.total_memory,
        "major": p.major,
        "minor": p.minor,
        "multi_processor_count": p.multi_processor_count,
        "L2_cache_size": getattr(p, "L2_cache_size", None),
        "uuid": str(getattr(p, "uuid", None)),
    }
    check(props["total_memory"] > 0 and props["multi_processor_count"] > 0,
          f"sane properties {props}")

    z = torch.zeros(10, 10).to("cuda")
    back = z.cpu()
    zeros_ok = back.shape == (10, 10) and bool(torch.equal(back, torch.zeros(10, 10)))
    check(zeros_ok, "zeros(10,10) -> cuda -> cpu equals zeros")

    a = torch.arange(1000, dtype=torch.float32, device="cuda")
    s = (a * 3 + 1).sum().item()  # integers < 2**24: exact in float32
    check(s == 3 * 499500 + 1000, f"sum(3*i+1, i<1000) = {s}, expected 1499500")
    m = torch.ones(64, 64, device="cuda") @ torch.full((64, 64), 0.5, device="cuda")
    mm_ok = bool((m.cpu() == 32.0).all())
    check(mm_ok, "ones(64,64) @ 0.5 == 32 everywhere (cuBLAS)")
    torch.cuda.synchronize()

    return {
        "is_available": torch.cuda.is_available(),
        "device_count": n,
        "device_name": torch.cuda.get_device_name(0),
        "capability": list(torch.cuda.get_device_capability(0)),
        "props": props,
        "zeros_roundtrip": zeros_ok,
        "arith_sum": common.fhex(s),
        "matmul_ok": mm_ok,
    }


if __name__ == "__main__":
    common.main("t1_basics", run)
