"""apps.jsonl (bench/apps/run.sh) as a markdown table: every case's first
and steady step beside the same model's native run, as ratios."""
import json
import sys


def main(path):
    rows = [json.loads(line) for line in open(path) if line.strip()]
    native = {r["result"]["model"]: r["result"] for r in rows if r["case"] == "native"}
    print("| model | case | first step ms | step ms | step / native | first / native first "
          "| replies per step |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in rows:
        res, base = r["result"], native.get(r["result"]["model"], {})
        if "error" in res:
            print(f"| {res['model']} | {r['case']} | error: {res['error']} | | | | |")
            continue
        ratio = lambda k: f"{res[k] / base[k]:.3f}" if base.get(k) else "-"
        print(f"| {res['model']} | {r['case']} | {res['first_step_ms']:.1f} | {res['step_ms']:.2f} "
              f"| {ratio('step_ms')} | {ratio('first_step_ms')} | {res.get('replies_per_step', '-')} |")


if __name__ == "__main__":
    main(sys.argv[1])
