"""The cuda-samples table: reads samples.sh's per-run results and writes
samples.md and samples.json. Exits 1 if a sample that passes natively does
not pass through scuda.

    python3 report.py LOG_DIR OUT_DIR
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

OK = ("pass", "waived")
# The line that says what went wrong: the first that names an error.
ERROR = re.compile(r"error|fail|not supported|abort|segmentation|killed|unknown|timed? ?out",
                   re.IGNORECASE)


def result(logs: Path, name: str, mode: str) -> dict:
    fields = (logs / f"{name}.{mode}.res").read_text().rstrip("\n").split("\t") \
        if (logs / f"{name}.{mode}.res").exists() else ["not run", "-"]
    verdict, secs = fields[0], fields[1]
    return {"verdict": verdict, "seconds": None if secs == "-" else float(secs),
            "first_error": "" if verdict in OK else first_error(logs / f"{name}.{mode}.log")}


def first_error(log: Path) -> str:
    if not log.exists():
        return ""
    lines = [l.strip() for l in log.read_text(errors="replace").splitlines() if l.strip()]
    hit = next((l for l in lines if ERROR.search(l)), lines[-1] if lines else "")
    return hit[:200]


def main() -> int:
    logs, out = Path(sys.argv[1]), Path(sys.argv[2])
    rows = []
    for line in (logs / "list.tsv").read_text().splitlines():
        name = line.split("\t")[0]
        native, scuda = result(logs, name, "native"), result(logs, name, "scuda")
        ratio = None
        if native["seconds"] and scuda["seconds"] is not None:
            ratio = round(scuda["seconds"] / native["seconds"], 2)
        rows.append({"name": name, "native": native, "scuda": scuda, "ratio": ratio})
    native_ok = [r for r in rows if r["native"]["verdict"] in OK]
    both_ok = [r for r in native_ok if r["scuda"]["verdict"] in OK]
    lost = [r for r in native_ok if r["scuda"]["verdict"] not in OK]
    slow = [r for r in both_ok if r["ratio"] and r["ratio"] > 3]
    summary = (f"{len(both_ok)} of {len(native_ok)} samples that pass natively pass through "
               f"scuda ({len(rows)} in the list); {len(slow)} take over 3x their native time")
    md = [f"# cuda-samples through scuda\n\n{summary}.\n",
          "| sample | native | s | scuda | s | ratio | first error through scuda |",
          "|---|---|---:|---|---:|---:|---|"]
    for r in rows:
        n, s = r["native"], r["scuda"]
        err = (s["first_error"] or "").replace("|", "/")
        md.append(f"| {r['name']} | {n['verdict']} | {n['seconds'] or '-'} | {s['verdict']} | "
                  f"{s['seconds'] or '-'} | {r['ratio'] or '-'} | {err} |")
    md.append("")
    md += [f"- lost through scuda: {r['name']} ({r['scuda']['verdict']}): "
           f"{r['scuda']['first_error']}" for r in lost]
    md += [f"- slow: {r['name']} {r['ratio']}x" for r in slow]
    (out / "samples.md").write_text("\n".join(md) + "\n")
    (out / "samples.json").write_text(json.dumps(
        {"summary": summary, "samples": rows}, indent=1))
    print(summary)
    for r in lost:
        print(f"LOST {r['name']}: {r['scuda']['verdict']}: {r['scuda']['first_error']}")
    for r in slow:
        print(f"SLOW {r['name']}: {r['ratio']}x")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
