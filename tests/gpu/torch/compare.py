#!/usr/bin/env python3
"""compare.py NATIVE_OUT SCUDA_OUT RULE [--key KEY]

Compares the last `RESULT <name> {json}` line of two stdout files.
RULE: exact | rel:TOL (e.g. rel:1e-5).
  - dicts: same keys, values compared recursively; lists: same length,
    elementwise;
  - floats (JSON numbers with a fraction, or float.hex() strings such as
    "0x1.8p+1", "inf", "nan"): equal (exact), or |a-b| <= TOL*max(|a|,|b|)
    (rel); NaN equals NaN;
  - integers, booleans, null and other strings: always exactly equal.
--key KEY compares only that top-level key and allows different RESULT names
(e.g. t7's losses against t3's).
Prints one line: the first difference, or how many values agreed. Exits 0 when
equal under RULE, 1 when different, 2 when a file has no usable RESULT line.
"""
import argparse
import json
import math
import re
import sys

HEXFLOAT = re.compile(
    r"[-+]?(0x[0-9a-f]+(\.[0-9a-f]*)?(p[-+]?[0-9]+)?|inf|infinity|nan)", re.I)


def load(path):
    try:
        with open(path, errors="replace") as f:
            lines = [ln.rstrip("\n") for ln in f if ln.startswith("RESULT ")]
    except OSError as e:
        raise ValueError(f"{path}: {e.strerror}")
    if not lines:
        raise ValueError(f"{path}: no RESULT line")
    parts = lines[-1].split(" ", 2)
    if len(parts) < 3:
        raise ValueError(f"{path}: RESULT line has no json: {lines[-1][:100]}")
    try:
        payload = json.loads(parts[2])
    except ValueError as e:
        raise ValueError(f"{path}: RESULT json does not parse: {e}")
    if isinstance(payload, dict) and "error" in payload:
        raise ValueError(f"{path}: the script failed: {payload['error']}")
    return parts[1], payload


def as_float(v):
    """The float that v stands for, or None if v is not a float."""
    if isinstance(v, float):
        return v
    if isinstance(v, str) and HEXFLOAT.fullmatch(v):
        return float.fromhex(v) if "x" in v.lower() else float(v)
    return None


def show(v):
    f = as_float(v)
    return f"{v} ({f!r})" if isinstance(v, str) and f is not None else repr(v)


class Compare:
    def __init__(self, rule):
        if rule == "exact":
            self.tol = None
        elif rule.startswith("rel:"):
            self.tol = float(rule[4:])
            if not self.tol >= 0:
                raise ValueError(f"bad tolerance in {rule}")
        else:
            raise ValueError(f"unknown RULE {rule!r} (exact | rel:TOL)")
        self.count = 0
        self.worst = 0.0  # largest relative difference among floats

    def same(self, a, b, path):
        """None if a and b agree under the rule, else a description."""
        if isinstance(a, dict) and isinstance(b, dict):
            if a.keys() != b.keys():
                return (f"{path or '.'}: keys differ: only native {sorted(a.keys() - b.keys())}, "
                        f"only scuda {sorted(b.keys() - a.keys())}")
            for k in sorted(a):
                d = self.same(a[k], b[k], f"{path}.{k}")
                if d:
                    return d
            return None
        if isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                return f"{path}: length {len(a)} (native) != {len(b)} (scuda)"
            for i, (x, y) in enumerate(zip(a, b)):
                d = self.same(x, y, f"{path}[{i}]")
                if d:
                    return d
            return None
        self.count += 1
        fa, fb = as_float(a), as_float(b)
        if fa is not None and fb is not None and not isinstance(a, bool) and not isinstance(b, bool):
            return self.floats(fa, fb, a, b, path)
        if type(a) is not type(b) or a != b:
            return f"{path}: native {show(a)} != scuda {show(b)}"
        return None

    def floats(self, fa, fb, a, b, path):
        if math.isnan(fa) or math.isnan(fb):
            ok = math.isnan(fa) and math.isnan(fb)
            rel = 0.0 if ok else math.inf
        elif fa == fb:
            ok, rel = True, 0.0
        elif math.isinf(fa) or math.isinf(fb):
            ok, rel = False, math.inf
        else:
            rel = abs(fa - fb) / max(abs(fa), abs(fb))
            ok = self.tol is not None and rel <= self.tol
        self.worst = max(self.worst, rel)
        if ok:
            return None
        return f"{path}: native {show(a)} != scuda {show(b)}, relative difference {rel:.3g}"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("native")
    ap.add_argument("scuda")
    ap.add_argument("rule", help="exact | rel:TOL")
    ap.add_argument("--key", help="compare only this top-level key; names may differ")
    args = ap.parse_args(argv)
    try:
        cmp = Compare(args.rule)
        (na, a), (nb, b) = load(args.native), load(args.scuda)
        if args.key:
            if not (isinstance(a, dict) and isinstance(b, dict) and args.key in a and args.key in b):
                raise ValueError(f"key {args.key!r} missing in {na} or {nb}")
            a, b = a[args.key], b[args.key]
        elif na != nb:
            print(f"different RESULT names: {na} (native) vs {nb} (scuda)")
            return 1
    except ValueError as e:
        print(f"cannot compare: {e}")
        return 2
    diff = cmp.same(a, b, "")
    if diff:
        print(f"{na}: differs ({args.rule}) at {diff}")
        return 1
    worst = "identical" if cmp.worst == 0 else f"largest relative difference {cmp.worst:.3g}"
    print(f"{na}: {cmp.count} values agree ({args.rule}), {worst}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
