"""Where a generate.py workload makes the host wait for the GPU: every line of
Python that PyTorch's sync debug mode catches synchronizing, counted per
generated token (a 64-token call less a 1-token call, over 63). Through
scuda each such wait is a round trip, so this is what a link's latency
costs per token. Runs natively. Usage: sync_sites.py NAME [NAME...]."""
import collections
import json
import sys
import traceback
import warnings

import torch

import generate


def where(frame):
    return f"{frame.filename.split('site-packages/')[-1]}:{frame.lineno}"


def site(stack):
    """The innermost frame outside PyTorch's own files (the caller's line),
    and the innermost frame of all when it is PyTorch's."""
    inner = f" [in {where(stack[-1])}]" if stack and "/torch/" in stack[-1].filename else ""
    for frame in reversed(stack):
        if "/torch/" not in frame.filename:
            return f"{where(frame)} {frame.line}{inner}"
    return "(inside torch)" + inner


def sites_of(fn):
    counts = collections.Counter()

    def record(message, category, filename, lineno, file=None, line=None):
        stack = [f for f in traceback.extract_stack()[:-1] if not f.filename.endswith("warnings.py")]
        counts[site(stack)] += 1

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = record
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
            torch.cuda.synchronize()
        finally:
            torch.cuda.set_sync_debug_mode(0)
    return counts


def main():
    for name in sys.argv[1:]:
        torch.manual_seed(0)
        _, _, generate_n = generate.generation(name, None)
        one = sites_of(lambda: generate_n(1))
        many = sites_of(lambda: generate_n(generate.NEW_TOKENS))
        per_token = {k: round((many[k] - one.get(k, 0)) / (generate.NEW_TOKENS - 1), 2)
                     for k in many}
        print(json.dumps({"model": name, "per_token": sum(per_token.values()),
                          "sites": dict(sorted(per_token.items(), key=lambda kv: -kv[1]))}))


if __name__ == "__main__":
    main()
