"""Puts header facts and annotations together: one Plan per function."""
from __future__ import annotations

from dataclasses import dataclass

from annotations import Note
from classify import Classifier, Kind
from cparse import Function, Header

# The handlings only nvml_annotations.toml uses, beside annotations.HANDLINGS.
NVML_HANDLINGS = ("server", "cached", "cached_server")

DEFAULT_REASONS = {
    "local": "answered on the client",
    "custom": "hand-written marshalling",
    "unsupported": "marked unsupported",
    "server": "forwarded; the server's handler is hand-written",
    "cached": "forwarded once; the client keeps the answer while NVML stays initialised",
    "cached_server": "forwarded once and kept, as cached; the server's handler is hand-written",
}


@dataclass(frozen=True)
class Plan:
    fn: Function
    handling: str
    reason: str
    kinds: tuple[Kind, ...]
    destroys: str | None
    generic: bool = True
    submit: str = "call"
    twins: bool = False
    shell: bool = False

    @property
    def name(self) -> str:
        return self.fn.name

    @property
    def marshalled(self) -> bool:
        """Gets an op, a server handler and a forward:: function: forwarded
        functions, and custom ones whose parameters all have a kind."""
        ok = self.generic and all(k.kind != "unsupported" for k in self.kinds)
        return self.handling == "forward" or (self.handling == "custom" and ok)

    def params_kinds(self):
        return zip(self.fn.params, self.kinds)


def plan_all(header: Header, notes: dict[str, Note],
             classifier: Classifier | None = None) -> list[Plan]:
    classifier = classifier or Classifier(set(header.handles))
    return [plan_one(fn, notes, classifier)
            for _, fn in sorted(header.functions.items())]


def plan_one(fn: Function, notes: dict[str, Note], classifier: Classifier) -> Plan:
    note = notes.get(fn.name) or notes.get(fn.base) or Note()
    kinds = tuple(classifier.param(fn, p, note.params.get(p.name)) for p in fn.params)
    check_counts(fn, kinds)
    outputs = [k.kind for k in kinds if k.kind in ("inout", "out_buf", "out_handles", "out_items")]
    if note.submit == "one-way" and outputs:
        raise SystemExit(f"annotations: `{fn.name}` is one-way but has outputs")
    destroys = note.destroys or implied_destroy(fn, kinds)
    if note.destroys and kinds[param_index(fn, destroys)].kind != "handle":
        raise SystemExit(f"annotations: `{fn.name}` destroys a non-handle")
    if note.handling in DEFAULT_REASONS:
        reason = note.reason or DEFAULT_REASONS[note.handling]
        shell = note.handling in ("custom", "local") and not note.twins and note.shell
        if shell and fn.per_thread:
            raise SystemExit(f"annotations: `{fn.name}` is a per-thread variant of a custom or "
                             "local function: annotate its base with twins, or shell = false")
        return Plan(fn, note.handling, reason, kinds, destroys, note.generic, note.submit,
                    note.twins, shell)
    refused = [k.reason for k in kinds if k.kind == "unsupported"]
    if refused and note.handling == "forward":
        raise SystemExit(f"annotations: `{fn.name}` is forward but {refused[0]}")
    if refused:
        return Plan(fn, "unsupported", refused[0], kinds, destroys)
    return Plan(fn, "forward", note.reason, kinds, destroys, True, note.submit)


def check_counts(fn: Function, kinds: tuple[Kind, ...]) -> None:
    """An in array's count is a scalar parameter; an out array's, an inout
    one, so the server can check the array against it."""
    by_name = {p.name: k for p, k in zip(fn.params, kinds)}
    for k in kinds:
        if k.kind not in ("in_handles", "in_items", "out_handles", "out_items"):
            continue
        want = "scalar" if k.kind.startswith("in_") else "inout"
        if by_name.get(k.expr, Kind("")).kind != want:
            raise SystemExit(f"annotations: `{fn.name}`: {k.kind}[{k.expr}] needs a count parameter of kind {want}")


def implied_destroy(fn: Function, kinds: tuple[Kind, ...]) -> str | None:
    named = "Destroy" in fn.name or "Unload" in fn.name
    if named and kinds and kinds[0].kind == "handle":
        return fn.params[0].name
    return None


def param_index(fn: Function, name: str) -> int:
    return [p.name for p in fn.params].index(name)
