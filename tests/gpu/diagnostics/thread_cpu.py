#!/usr/bin/env python3
"""thread_cpu.py ROOT_PID... -- CMD...: runs CMD and, every 0.5 s while it
runs, reads the CPU time of every thread of CMD's process tree and of each
ROOT_PID's (a server: its sessions are its children). At the end it prints,
for the busiest half second, each thread over 10% of a core: process,
thread name and share of a core. Shows which thread limits a copy that
does not scale (one thread at 100% while the others wait), and where each
of those threads waited when it did (its most frequent wait channels,
sampled every 10 ms: futex_wait_queue is a lock or condition variable,
do_poll or do_sys_poll a socket) and on which CPUs it was seen running
(sampled with the wait channels: a thread that shares a core with
another busy one, or moves between NUMA nodes, shows here)."""
import collections
import os
import subprocess
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def tree(pid):
    pids = [pid]
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            for child in f.read().split():
                pids += tree(int(child))
    except OSError:
        pass
    return pids


def threads(roots):
    """(pid, tid) -> (process name, thread name, cpu seconds, last cpu)"""
    out = {}
    for root in roots:
        for pid in tree(root):
            try:
                tids = os.listdir(f"/proc/{pid}/task")
                comm = open(f"/proc/{pid}/comm").read().strip()
            except OSError:
                continue
            for tid in tids:
                try:
                    stat = open(f"/proc/{pid}/task/{tid}/stat").read()
                except OSError:
                    continue
                name = stat[stat.index("(") + 1:stat.rindex(")")]
                fields = stat[stat.rindex(")") + 2:].split()
                out[(pid, int(tid))] = (comm, name, (int(fields[11]) + int(fields[12])) / TICK,
                                        int(fields[36]))
    return out


def main():
    split = sys.argv.index("--")
    roots = [int(p) for p in sys.argv[1:split]]
    child = subprocess.Popen(sys.argv[split + 1:])
    before, busiest, busiest_total = threads(roots + [child.pid]), [], 0.0
    waits = collections.defaultdict(collections.Counter)
    cpus = collections.defaultdict(collections.Counter)
    last = time.monotonic()
    while child.poll() is None:
        for _ in range(50):
            time.sleep(0.01)
            for pid, tid in before:
                try:
                    waits[(pid, tid)][open(f"/proc/{pid}/task/{tid}/wchan").read() or "running"] += 1
                    stat = open(f"/proc/{pid}/task/{tid}/stat").read()
                    cpus[(pid, tid)][int(stat[stat.rindex(")") + 2:].split()[36])] += 1
                except (OSError, IndexError, ValueError):
                    pass
        now = threads(roots + [child.pid])
        elapsed, last = time.monotonic() - last, time.monotonic()
        rows = []
        for key, (comm, name, cpu, _) in now.items():
            if key in before:
                rows.append(((cpu - before[key][2]) / elapsed, key, comm, name))
        total = sum(r[0] for r in rows)
        if total > busiest_total:
            busiest, busiest_total = rows, total
        before = now
    print(f"# busiest half second: {busiest_total:.2f} cores in all")
    for share, (pid, tid), comm, name in sorted(busiest, reverse=True):
        if share >= 0.1:
            where = ", ".join(f"{w} {n}" for w, n in waits[(pid, tid)].most_common(3))
            seen = " ".join(f"{c}:{n}" for c, n in cpus[(pid, tid)].most_common(4))
            print(f"#   {share:5.2f}  pid {pid} {comm}  thread {tid} {name}: {where}; cpus {seen}")
    return child.returncode


if __name__ == "__main__":
    sys.exit(main())
