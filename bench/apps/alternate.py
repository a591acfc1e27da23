"""Native and scuda rounds of one generate.py workload, alternated between two
long-lived processes, so that a ratio is the median of many adjacent pairs
rather than of a few pairs of whole processes started minutes apart.

Both processes build and warm the model at once (generate.py --serve), then
measure a round each in turn: native first in odd rounds, scuda first in
even ones, so that a drift of the host over a pair weighs on both
sides alike. Rows go to stdout in run.sh's apps.jsonl shape (cases
`native` and `scuda-warm`, one repeat per round), for report.py.

Given several workloads, the same two processes take them in turn ("load
NAME"), so that Python's imports and each model's build are paid once.

Usage: alternate.py NAME... --rounds N --scuda-prefix "CMD ..." [--scuda-case CASE]
                    [--python PY]
  --scuda-prefix: what runs the scuda worker, e.g.
  "tests/gpu/isolate.sh build/bin/scuda run --server 127.0.0.1:PORT --"."""
import argparse
import json
import shlex
import subprocess
import sys
import time


class Worker:
    """One generate.py --serve process; its stderr goes to `log`."""

    def __init__(self, case, command, log):
        self.case = case
        self.log = open(log, "w")
        self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.log, text=True, bufsize=1)
        self.first_call_ms = None
        self.name = None  # the workload it has warm

    def line(self):
        """The next JSON line; other lines (a library's chatter) are skipped."""
        for text in self.proc.stdout:
            if text.startswith("{"):
                return json.loads(text)
        raise RuntimeError(f"{self.case} worker ended (exit {self.proc.wait()}); "
                           f"see {self.log.name}")

    def ready(self):
        self.first_call_ms = self.line()["first_call_ms"]

    def load(self, name):
        """Asks for another workload; ready() waits until it is warm."""
        self.proc.stdin.write(f"load {name}\n")
        self.proc.stdin.flush()

    def round(self):
        self.proc.stdin.write("round\n")
        self.proc.stdin.flush()
        return self.line()

    def close(self):
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write("quit\n")
                self.proc.stdin.close()
                self.proc.wait(timeout=60)
            except (BrokenPipeError, subprocess.TimeoutExpired):
                self.proc.kill()
        self.log.close()


def row(case, name, repeat, result, first_call_ms):
    result = dict(result, model=name, first_call_ms=first_call_ms)
    # paired: set against the native round of the same repeat (report.py).
    return {"case": case, "repeat": repeat, "paired": True, "result": result}


def alternate(name, workers, rounds):
    """Warms `name` in both workers at once, then prints their rounds' rows."""
    start = time.monotonic()
    for w in workers.values():
        if name != w.name:
            w.load(name)
    for w in workers.values():
        w.ready()
        w.name = name
    print(f"{name}: both workers ready in {time.monotonic() - start:.0f} s", file=sys.stderr)
    order = list(workers.values())
    for r in range(1, rounds + 1):
        for w in order if r % 2 else reversed(order):
            print(json.dumps(row(w.case, name, r, w.round(), w.first_call_ms)), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="+", metavar="NAME",
                        help="generate.py workloads (generate.py --list)")
    parser.add_argument("--rounds", type=int, default=10, help="pairs of rounds (default 10)")
    parser.add_argument("--scuda-prefix", required=True,
                        help="the command that runs the scuda worker, before python")
    parser.add_argument("--scuda-case", default="scuda-warm",
                        help="the scuda rows' case, e.g. scuda-1ms-10gbit behind a link")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--logs", default="/tmp", help="folder for the workers' stderr")
    args = parser.parse_args()
    first = args.names[0]
    program = [args.python, "bench/apps/generate.py", first, "--serve"]
    workers = {
        "native": Worker("native", program, f"{args.logs}/alternate_{first}_native.err"),
        args.scuda_case: Worker(args.scuda_case, shlex.split(args.scuda_prefix) + program,
                                f"{args.logs}/alternate_{first}_scuda.err"),
    }
    for w in workers.values():
        w.name = first  # each process warms the first workload as it starts
    name = first
    try:
        for name in args.names:
            alternate(name, workers, args.rounds)
    except (RuntimeError, BrokenPipeError) as e:
        print(json.dumps({"case": "native", "repeat": 1,
                          "result": {"model": name, "error": str(e)[:200]}}))
        return 1
    finally:
        for w in workers.values():
            w.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
