"""apps.jsonl (bench/apps/run.sh) as a markdown table: every case's first
and steady step beside the same model's native run, as ratios (a warm
loopback run beside the native run of its repeat, any other case beside
the median of the native runs); then each repeated case's steady ratio
over its repeats; then, from the warm case's stats (in the folder
given second), the functions that waited for replies most."""
import json
import os
import re
import statistics
import sys


def rtt_ms(case):
    """The emulated link's round trip in a case's name (scuda-150ms), else 0."""
    m = re.search(r"(\d+(?:\.\d+)?)ms", case)
    return float(m.group(1)) if m else 0.0


def overhead_rtts(res, base, case):
    """What the case's link added to the first step, in its round trips: against
    the warm loopback run, since native first steps vary by a third between runs."""
    rtt = rtt_ms(case)
    if not rtt or not base.get("first_step_ms"):
        return "-"
    return f"{(res['first_step_ms'] - base['first_step_ms']) / rtt:.1f}"


def first_step_waits(rows, count=10):
    for r in rows:
        waits = r["result"].get("first_step_waits")
        if not waits:
            continue
        print(f"\n{r['result']['model']}, {r['case']}, first step: functions by round trips")
        print("| function | round trips |\n|---|---:|")
        for name, n in list(waits.items())[:count]:
            print(f"| {name} | {n} |")


def top_waits(folder, model, count=8):
    path = os.path.join(folder, f"apps_{model}_scuda-warm_stats.json")
    if not os.path.exists(path):
        return
    stats = json.load(open(path))
    rows = stats["functions"] if isinstance(stats, dict) else stats
    rows = sorted((r for r in rows if r.get("round_trips")), key=lambda r: -r["round_trips"])
    print(f"\n{model}, scuda-warm, whole run: functions by round trips")
    print("| function | calls | round trips | one-way |\n|---|---:|---:|---:|")
    for r in rows[:count]:
        print(f"| {r['function']} | {r['calls']} | {r['round_trips']} | {r['one_way']} |")


def same_output(res, native, model):
    """Whether a run's output digest (generate.py) equals the first native run's."""
    theirs = native.get((model, 1), {}).get("output_sha")
    if not theirs or "output_sha" not in res:
        return "-"
    return "yes" if res["output_sha"] == theirs else "NO"


def repeat(row):
    return row.get("repeat", 1)


def by_model_and_repeat(rows, case):
    return {(r["result"]["model"], repeat(r)): r["result"] for r in rows
            if r["case"] == case and "error" not in r["result"]}


def median_native(native, model):
    """The median of a model's native runs, figure by figure: what a case
    that runs once is set against, since a native step alone moved by a
    fifth between the runs of one benchmark."""
    runs = [res for (m, _), res in native.items() if m == model]
    if not runs:
        return {}
    return {k: statistics.median(r[k] for r in runs) for k in ("first_step_ms", "step_ms")}


def base_for(row, native):
    """A warm loopback run's native run, and an alternated round's, is that
    of its repeat; a case that runs once, or whose repeats are not paired
    (the links' whole processes), is set against the median of the native
    runs."""
    case, model, n = row["case"], row["result"]["model"], repeat(row)
    paired = case in ("native", "scuda-warm") or row.get("paired")
    if paired and (model, n) in native:
        return native[(model, n)]
    return median_native(native, model)


def spreads(rows, native):
    """Each repeated case's steady step over its native base (base_for):
    the median, the lowest and the highest."""
    ratios = {}
    for r in rows:
        res, case = r["result"], r["case"]
        if case == "native" or "error" in res:
            continue
        base = base_for(r, native)
        if base.get("step_ms"):
            ratios.setdefault((res["model"], case), []).append(res["step_ms"] / base["step_ms"])
    ratios = {k: v for k, v in ratios.items() if len(v) > 1}
    if not ratios:
        return
    print("\n| model | case | steady step / native, median | lowest | highest | repeats |")
    print("|---|---|---:|---:|---:|---:|")
    for (model, case), v in ratios.items():
        print(f"| {model} | {case} | {statistics.median(v):.3f} | {min(v):.3f} | {max(v):.3f} "
              f"| {len(v)} |")


def link_costs(rows, native, folder):
    """What crossing each link added to a steady step, set against the link's
    own round trip as link_rtt.py measured it (apps_links.jsonl)."""
    path = os.path.join(folder or "", "apps_links.jsonl")
    if not folder or not os.path.exists(path):
        return
    links = [json.loads(line) for line in open(path) if line.strip()]
    print("\n| link | measured round trip ms (p10 to p90) | model | added to a step, ms, "
          "median | in measured round trips | replies per step | rounds |")
    print("|---|---|---|---:|---:|---:|---:|")
    for link in links:
        rtt = link["rtt"]
        added, replies = {}, {}
        for r in rows:
            res = r["result"]
            if r["case"] != f"scuda-{link['link']}" or "error" in res:
                continue
            base = base_for(r, native)
            if base.get("step_ms"):
                added.setdefault(res["model"], []).append(res["step_ms"] - base["step_ms"])
                replies.setdefault(res["model"], []).append(
                    res.get("replies_per_step", res.get("replies_per_token", 0)))
        for model, v in added.items():
            mid = statistics.median(v)
            print(f"| {link['link']} | {rtt['link_rtt_ms']:.3f} ({rtt['link_rtt_p10_ms']:.3f} to "
                  f"{rtt['link_rtt_p90_ms']:.3f}) | {model} | {mid:.3f} "
                  f"| {mid / rtt['link_rtt_ms']:.2f} | {statistics.median(replies[model])} "
                  f"| {len(v)} |")


def main(path, folder=None):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    native = by_model_and_repeat(rows, "native")
    warm = by_model_and_repeat(rows, "scuda-warm")
    print("| model | case | first step ms | step ms | step / native | first / native first "
          "| replies per step | first-step replies | link's first-step cost in RTTs | same output |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows:
        res = r["result"]
        model, n = res["model"], repeat(r)
        base = base_for(r, native)
        case = r["case"] if n == 1 else f"{r['case']} #{n}"
        if "error" in res:
            print(f"| {model} | {case} | error: {res['error']} | | | | | | | |")
            continue
        ratio = lambda k: f"{res[k] / base[k]:.3f}" if base.get(k) else "-"
        print(f"| {model} | {case} | {res['first_step_ms']:.1f} | {res['step_ms']:.2f} "
              f"| {ratio('step_ms')} | {ratio('first_step_ms')} "
              f"| {res.get('replies_per_step', res.get('replies_per_token', '-'))} "
              f"| {res.get('first_step_replies', '-')} "
              f"| {overhead_rtts(res, warm.get((model, 1), {}), r['case'])} "
              f"| {same_output(res, native, model)} |")

    spreads(rows, native)
    link_costs(rows, native, folder)
    first_step_waits(rows)
    for model in dict.fromkeys(r["result"]["model"] for r in rows):
        if folder:
            top_waits(folder, model)


if __name__ == "__main__":
    main(*sys.argv[1:3])
