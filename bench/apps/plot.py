"""Steady step time against link round-trip time, one line per model, from
apps.jsonl (bench/apps/run.sh), with each model's native step as a dashed
line. Usage: plot.py APPS_JSONL OUT_PNG  (needs matplotlib)."""
import json
import sys

# The round-trip time each case adds to the loopback link, in ms.
LINK_RTT_MS = {"scuda-warm": 0.0, "scuda-1ms-10gbit": 1.0, "scuda-150ms": 150.0}


def main(path, png):
    try:
        import matplotlib
    except ImportError:
        sys.exit("plot.py needs matplotlib: pip install matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # The first repeat only: one point per case.
    rows = [r for r in map(json.loads, filter(str.strip, open(path))) if r.get("repeat", 1) == 1]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for model in dict.fromkeys(r["result"]["model"] for r in rows):
        mine = [r for r in rows if r["result"]["model"] == model and "step_ms" in r["result"]]
        points = sorted((LINK_RTT_MS[r["case"]], r["result"]["step_ms"])
                        for r in mine if r["case"] in LINK_RTT_MS)
        if not points:
            continue
        line, = ax.plot(*zip(*points), marker="o", label=f"{model} through scuda")
        for r in mine:
            if r["case"] == "native":
                ax.axhline(r["result"]["step_ms"], color=line.get_color(), linestyle="--",
                           label=f"{model} native")
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlim(left=0)
    ax.set_yscale("log")
    ax.set_xlabel("link round-trip time added to loopback (ms)")
    ax.set_ylabel("steady training step (ms)")
    ax.set_title("Step time against link latency (one run, H100)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(png, dpi=120)
    print(f"wrote {png}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
