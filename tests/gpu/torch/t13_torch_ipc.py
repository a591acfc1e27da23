#!/usr/bin/env python3
"""t13: CUDA tensors shared between processes (CUDA IPC: cuIpcGetMemHandle /
cuIpcOpenMemHandle for the memory, IPC event handles for the ordering)
through torch.multiprocessing with the spawn start method.

The parent puts on a Queue cuda tensors of 4 KB (inside one of the caching
allocator's 2 MiB small-pool segments), 1.2 MB, 4 MB and 12 MB (large
pool), and a 16 KB slice of a 2.4 MB tensor at an offset of 123457
elements. The child reads them and compares each with the same data made
on its own CPU, adds 1 in place to the 4 KB tensor and to the slice, then
makes a 2 MiB + 12 B cuda tensor of its own and sends it back. The parent
checks that it sees the child's writes (and that the rest of the sliced
tensor is untouched) and the child's tensor, then lets the child exit.
Every wait has a timeout, so a hang fails the script. Prints checksums.
Compare: exact (copies and +1 only)."""
import os
import queue
import sys
import time
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

NAME = "t13_torch_ipc"
TIMEOUT = 90  # seconds for any one wait on the other process
SIZES = {"small": 1_000, "medium": 300_000, "big": 1_000_000, "huge": 3_000_000}  # float32
BASE, OFFSET, LENGTH = 600_000, 123_457, 4_096  # the slice: base[OFFSET:OFFSET + LENGTH]
CHILD_SIZE = (1 << 19) + 3


def parent_data(torch):
    """The parent's tensors, made on the CPU: the same in both processes."""
    g = torch.Generator().manual_seed(3)
    data = {name: torch.randn(n, generator=g) for name, n in SIZES.items()}
    data["base"] = torch.randn(BASE, generator=g)
    return data


def child_data(torch):
    return torch.randn(CHILD_SIZE, generator=torch.Generator().manual_seed(4))


def total(t):
    """Exact text of the float64 sum of a tensor's values (on the CPU)."""
    return common.fhex(t.detach().cpu().double().sum())


# -------------------------------------------------------------------- child
def child_reads(torch, got):
    """What the child saw in the parent's tensors; then its writes (+1)."""
    want = parent_data(torch)
    want["view"] = want.pop("base")[OFFSET:OFFSET + LENGTH]
    seen = {}
    for name, t in sorted(got.items()):
        seen[name] = {"device": str(t.device), "numel": t.numel(), "storage_offset": t.storage_offset(),
                      "equal": bool(torch.equal(t.cpu(), want[name])), "sum": total(t)}
    got["small"].add_(1)
    got["view"].add_(1)
    torch.cuda.synchronize()
    return seen


def child_main(inbox, outbox, done):
    """Runs in the spawned process: every outcome goes back through outbox."""
    try:
        import torch
        got = inbox.get(timeout=TIMEOUT)
        seen = child_reads(torch, got)
        mine = child_data(torch).cuda()
        torch.cuda.synchronize()
        outbox.put({"seen": seen, "tensor": mine})
        if not done.wait(TIMEOUT):  # keep `mine` alive until the parent has read it
            print(f"{NAME} child: the parent never said done", file=sys.stderr, flush=True)
            sys.exit(3)
        del got, mine
    except Exception:  # noqa: BLE001 - report it to the parent
        traceback.print_exc()
        outbox.put({"error": traceback.format_exc().strip().splitlines()[-1][:200]})
        sys.exit(1)


# ------------------------------------------------------------------- parent
def parent_checks(torch, check, cpu, gpu):
    """After the child's writes: small + 1, the slice + 1, the rest of base as it was."""
    want_small = cpu["small"] + 1
    want_base = cpu["base"].clone()
    want_base[OFFSET:OFFSET + LENGTH] += 1
    torch.cuda.synchronize()
    small, base = gpu["small"].cpu(), gpu["base"].cpu()
    small_ok, base_ok = bool(torch.equal(small, want_small)), bool(torch.equal(base, want_base))
    check(small_ok, "parent sees the child's +1 in the 4 KB tensor")
    check(base_ok, "parent sees the child's +1 in the slice, and only there")
    return {"small_sum": total(small), "base_sum": total(base), "small_equal": small_ok, "base_equal": base_ok}


def from_child(torch, check, t):
    got = t.cpu()
    ok = torch.equal(got, child_data(torch))
    check(ok, "the child's tensor arrives intact")
    return {"device": str(t.device), "numel": t.numel(), "equal": bool(ok), "sum": total(got)}


def wait_reply(outbox, child):
    """The child's message; an error, not a long wait, if the child died."""
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        try:
            return outbox.get(timeout=1)
        except queue.Empty:
            if not child.is_alive():
                try:  # its last message may still be on the way
                    return outbox.get(timeout=2)
                except queue.Empty:
                    raise RuntimeError(f"the child died (exit code {child.exitcode}) "
                                       "without answering") from None
    raise RuntimeError(f"no answer from the child within {TIMEOUT} s")


def exchange(torch, check, ctx, gpu):
    """Starts the child, sends the tensors, waits for its answer."""
    inbox, outbox, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    child = ctx.Process(target=child_main, args=(inbox, outbox, done), daemon=True)
    child.start()
    try:
        sent = {name: gpu[name] for name in SIZES}
        sent["view"] = gpu["base"][OFFSET:OFFSET + LENGTH]
        inbox.put(sent)
        reply = wait_reply(outbox, child)
        if "error" in reply:
            raise RuntimeError(f"child: {reply['error']}")
        result = {"seen_by_child": reply["seen"], "from_child": from_child(torch, check, reply["tensor"])}
        del reply  # drop the child's tensor before letting the child go
        done.set()
        child.join(TIMEOUT)
        result["child_exitcode"] = child.exitcode
        check(child.exitcode == 0, f"child exit code {child.exitcode}")
        return result
    finally:
        if child.is_alive():
            child.kill()
            child.join(10)


def run(check):
    torch = common.setup(deterministic=False)
    import torch.multiprocessing as mp
    cpu = parent_data(torch)
    gpu = {name: t.cuda() for name, t in cpu.items()}
    torch.cuda.synchronize()
    result = exchange(torch, check, mp.get_context("spawn"), gpu)
    for name, seen in result["seen_by_child"].items():
        check(seen["equal"], f"the child sees {name} as the parent made it")
        check(seen["device"].startswith("cuda"), f"{name} is a cuda tensor in the child")
    check(result["seen_by_child"]["view"]["storage_offset"] == OFFSET, "the slice keeps its offset")
    result["parent_after_child"] = parent_checks(torch, check, cpu, gpu)
    return result


if __name__ == "__main__":
    common.main(NAME, run)
