"""bench/apps/report.py sets each warm repeat against the native run of its
repeat, and other cases against the median of the native runs, and sums up
each repeated case, and says whether each run's output equals native.
Usage: apps_report_test.py PATH/TO/report.py"""
import json
import subprocess
import sys
import tempfile


def row(case, repeat, step_ms, first_ms=100.0, sha="a1"):
    return {"case": case, "repeat": repeat,
            "result": {"model": "m", "first_step_ms": first_ms, "step_ms": step_ms,
                       "output_sha": sha}}


def columns(table, index):
    """{case as printed: its column `index`} (4: step / native, 9: same output)."""
    out = {}
    for line in table.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 10 and cells[0] == "m":
            out[cells[1]] = cells[index]
    return out


def main(report):
    rows = [row("native", 1, 8.0), row("scuda-cold", 1, 12.0), row("scuda-warm", 1, 8.8),
            row("native", 2, 10.0), row("scuda-warm", 2, 10.5, sha="b2"),
            row("native", 3, 12.0), row("scuda-warm", 3, 12.0),
            row("scuda-1ms-10gbit", 1, 11.0), row("scuda-1ms-10gbit", 2, 13.0)]
    with tempfile.NamedTemporaryFile("w", suffix=".jsonl") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
        f.flush()
        table = subprocess.run([sys.executable, report, f.name], capture_output=True,
                               text=True, check=True).stdout
    got = columns(table, 4)
    want = {"native": "1.000", "scuda-warm": "1.100", "scuda-warm #2": "1.050",
            "scuda-warm #3": "1.000", "scuda-cold": "1.200", "scuda-1ms-10gbit": "1.100",
            "scuda-1ms-10gbit #2": "1.300"}
    for case, ratio in want.items():
        assert got.get(case) == ratio, f"{case}: {got.get(case)}, want {ratio}\n{table}"
    same = columns(table, 9)
    assert same["scuda-warm #2"] == "NO" and same["scuda-warm"] == "yes", table
    assert "| m | scuda-warm | 1.050 | 1.000 | 1.100 | 3 |" in table, table
    assert "| m | scuda-1ms-10gbit | 1.200 | 1.100 | 1.300 | 2 |" in table, table
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1])
