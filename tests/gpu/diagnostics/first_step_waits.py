"""first_step_waits.py CLIENT_LOG: the replies a run of bench/apps/step_time.py
waited for in its first step, each with the driver calls that led to it.

The log is a client's at SCUDA_LOG_LEVEL=trace with SCUDA_STATS=1
(trace.sh): step_time.py writes stats just before and just after its first
step, and each write is logged."""
import collections
import sys

CONTEXT = 4


def main():
    lines = open(sys.argv[1], errors="replace").read().splitlines()
    marks = [i for i, line in enumerate(lines) if "stats written to" in line]
    if len(marks) < 2:
        sys.exit(f"{sys.argv[1]}: no first step marked (found {len(marks)} stats writes)")
    calls = collections.deque(maxlen=CONTEXT)
    counts = collections.Counter()
    for line in lines[marks[0]:marks[1]]:
        level, _, text = line.partition("] ")[2].partition(": ")
        if "waited for the reply to" in text or "waiting for the description" in text:
            print(f"{text}    <- {' / '.join(calls)}")
            if "waited for" in text:
                counts[text.rsplit(" ", 1)[-1]] += 1
        elif level == "trace" and " " not in text.strip():
            calls.append(text.strip())
    print("waits:", dict(counts.most_common()), "total", sum(counts.values()))


main()
