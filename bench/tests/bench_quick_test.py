"""`scuda bench --quick` against the driver test double writes every figure,
each positive and finite. How long it takes depends on the machine's link,
so only the subprocess's timeout bounds it. Usage: bench_quick_test.py PATH/TO/scuda DOUBLE_LIB"""
import json
import math
import os
import subprocess
import sys
import tempfile
import time

KEYS = [
    "sync_rtt_us", "raw_tcp_rtt_us", "sync_rtt_ratio", "raw_tcp_spin_rtt_us",
    "sync_rtt_spin_ratio",
    "h2d_gbps", "d2h_gbps", "h2d_pinned_gbps", "d2h_pinned_gbps",
    "raw_tcp_gbps", "raw_tcp_down_gbps",
    "h2d_ratio", "d2h_ratio", "h2d_pinned_ratio", "d2h_pinned_ratio",
    "launch_rate_per_s", "launch_client_cpu_us", "copy_client_cpu_us", "alloc_free_us",
    "h2d_sparse_gbps", "h2d_sparse_lz4_gbps", "h2d_lz4_speedup",
    "d2h_sparse_gbps", "d2h_sparse_lz4_gbps", "d2h_lz4_speedup",
]


def main():
    scuda, double = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.json")
        start = time.monotonic()
        run = subprocess.run([scuda, "bench", "--driver", double, "--quick", "--json", path],
                             capture_output=True, text=True, timeout=50)
        seconds = time.monotonic() - start
        print(run.stdout, run.stderr)
        assert run.returncode == 0, f"scuda bench exited {run.returncode}"
        with open(path) as f:
            figures = json.load(f)
    for key in KEYS:
        value = figures.get(key)
        assert isinstance(value, (int, float)), f"{key} missing: {value!r}"
        assert math.isfinite(value) and value > 0, f"{key} = {value}"
    assert figures["meta"]["module"] == "double", figures["meta"]
    assert figures["meta"]["driver"] == "scuda", figures["meta"]
    # A small async copy is one-way: its thread waits for no reply.
    assert figures["copy_replies_per_copy"] == 0, figures["copy_replies_per_copy"]
    print(f"every figure present; {seconds:.1f} s")


if __name__ == "__main__":
    main()
