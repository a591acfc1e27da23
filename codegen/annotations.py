"""The annotation table: per-function handling and parameter overrides."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from cparse import Function

HANDLINGS = ("forward", "local", "custom", "unsupported")
# call: request and reply; one-way: sent without waiting, errors latched on
# the server; sync: a synchronizing call, which also returns latched errors.
SUBMITS = ("call", "one-way", "sync")


@dataclass(frozen=True)
class Note:
    handling: str | None = None
    reason: str = ""
    params: dict[str, str] = field(default_factory=dict)
    destroys: str | None = None
    generic: bool = True
    submit: str = "call"
    # Custom only: the exported entry point and its per-thread variants are
    # generated, each calling the hand-written custom::<name> with the
    # default stream it names (emit_client.py).
    twins: bool = False
    # Custom and local only: false keeps the exported entry point itself
    # hand-written; otherwise it is generated, passing through in pass-through
    # mode and then calling the hand-written custom::<name>.
    shell: bool = True


def load(path: Path, functions: dict[str, Function], handlings=HANDLINGS,
         header: str = "cuda.h") -> dict[str, Note]:
    with open(path, "rb") as f:
        table = tomllib.load(f).get("functions", {})
    notes = {}
    for name, entry in sorted(table.items()):
        notes[name] = check(name, entry, functions, handlings, header)
    return notes


def load_legacy(path: Path) -> dict[str, str]:
    """[legacy]: "NAME@VERSION" (or "NAME@VERSION_pt") = hand-written adapter
    serving an old ABI that no declared function shares."""
    with open(path, "rb") as f:
        table = tomllib.load(f).get("legacy", {})
    for key, adapter in table.items():
        if "@" not in key or not adapter.startswith("scuda_legacy_"):
            raise SystemExit(f"annotations: [legacy] {key} = {adapter!r} is not NAME@VERSION = scuda_legacy_…")
    return table


def check(name: str, entry: dict, functions: dict[str, Function], handlings,
          header: str) -> Note:
    fn = functions.get(name)
    if fn is None:
        raise SystemExit(f"annotations: `{name}` is not a function in {header}")
    unknown = set(entry) - {"handling", "reason", "params", "destroys", "generic", "submit", "twins",
                         "shell"}
    if unknown:
        raise SystemExit(f"annotations: `{name}` has unknown keys {sorted(unknown)}")
    handling = entry.get("handling")
    if handling is not None and handling not in handlings:
        raise SystemExit(f"annotations: `{name}` has bad handling {handling!r}")
    submit = entry.get("submit", "call")
    if submit not in SUBMITS:
        raise SystemExit(f"annotations: `{name}` has bad submit {submit!r}")
    names = {p.name for p in fn.params}
    params = dict(entry.get("params", {}))
    for p in [*params, entry.get("destroys")]:
        if p is not None and p not in names:
            raise SystemExit(f"annotations: `{name}` has no parameter `{p}`")
    twins = bool(entry.get("twins", False))
    if twins and handling != "custom":
        raise SystemExit(f"annotations: `{name}` has twins but is not custom")
    shell = bool(entry.get("shell", True))
    if not shell and handling not in ("custom", "local"):
        raise SystemExit(f"annotations: `{name}` keeps its entry point but is not custom or local")
    return Note(handling, entry.get("reason", ""), params, entry.get("destroys"),
                bool(entry.get("generic", True)), submit, twins, shell)
