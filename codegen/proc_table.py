"""proc_table.h/.cc: what cuGetProcAddress hands out, by (name, version)."""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from cparse import Function, Pfn
from emit_tables import HEADER, param_list
from model import Plan

RENAME = re.compile(
    r"^#define\s+(cu\w+)\s+(?:__CUDA_API_PT(?:DS|SZ)\(\s*)?(cu\w+)\s*\)?\s*$", re.M)
SUFFIX = re.compile(r"^(.*?)(?:_v(\d+))?$")


@dataclass(frozen=True, order=True)
class Entry:
    """symbol "" means a version we cannot serve: it resolves to a stub that
    says so when called, since the real driver resolves every version it
    knows and cudart's start-up asks for old ones too."""
    name: str
    version: int
    per_thread: bool
    symbol: str

    def tag(self) -> str:
        return f"{self.name}@{self.version}{' (per-thread)' if self.per_thread else ''}"

    def stub(self) -> str:
        return f"unserved_{self.name}_{self.version}{'_pt' if self.per_thread else ''}"


def renames(cuda_h: Path, functions: dict[str, Function]) -> dict[str, str]:
    """cuda.h's `#define cuX cuX_v2` table, limited to the plain spellings."""
    found = {}
    for m in RENAME.finditer(cuda_h.read_text()):
        if m.group(2) in functions and not functions[m.group(2)].per_thread:
            found.setdefault(m.group(1), m.group(2))
    return found


def candidates(base: str, newest: str, functions: dict[str, Function]) -> list[str]:
    """The exported symbols for `base`, newest first: ..., base_v2, base.
    A suffix cuda.h does not declare is "" (a version we cannot serve)."""
    stem, number = SUFFIX.match(newest).groups()
    if stem != base:
        return [newest]
    declared = [int(SUFFIX.match(n).group(2) or 1) for n in functions
                if SUFFIX.match(n).group(1) == base and not functions[n].per_thread]
    top = max([int(number or 1), *declared])
    names = [base if n == 1 else f"{base}_v{n}" for n in range(top, 0, -1)]
    return [n if n in functions else "" for n in names]


def per_thread_symbol(symbol: str, functions: dict[str, Function]) -> str:
    if not symbol:
        return ""
    for suffix in ("_ptsz", "_ptds"):
        if symbol + suffix in functions:
            return symbol + suffix
    return ""


def map_family(base: str, pfns: list[Pfn], newest: str,
               functions: dict[str, Function]) -> tuple[list[Entry], list[str]]:
    entries, missed = [], []
    ordered = sorted(pfns, key=lambda p: p.version, reverse=True)
    symbols = candidates(base, newest, functions)
    for per_thread in (False, True):
        group = [p for p in ordered if p.per_thread == per_thread]
        names = [per_thread_symbol(s, functions) if per_thread else s for s in symbols]
        for pfn, symbol in zip(group, names + [""] * len(group)):
            add(entries, missed, pfn, symbol or same_abi(pfn, names, functions), functions)
    return entries, missed


def same_abi(pfn: Pfn, names: list[str], functions: dict[str, Function]) -> str:
    """A declared variant with exactly the old version's parameters: cuda.h
    dropped the old symbol, but the same call serves it (cudart's start-up
    calls e.g. cuDeviceGetUuid@9020)."""
    for name in names:
        if name and functions[name].signature_key() == pfn.arg_types:
            return name
    return ""


def add(entries, missed, pfn: Pfn, symbol: str, functions) -> None:
    tag = f"{pfn.base}@{pfn.version}{'_pt' if pfn.per_thread else ''}"
    if symbol and functions[symbol].signature_key() != pfn.arg_types:
        tag += f" (signature differs from {symbol})"
        symbol = ""
    if not symbol:
        missed.append(tag)
    entries.append(Entry(pfn.base, pfn.version, pfn.per_thread, symbol))


def build(pfns: list[Pfn], functions: dict[str, Function],
          cuda_h: Path) -> tuple[list[Entry], list[str]]:
    names = renames(cuda_h, functions)
    families: dict[str, list[Pfn]] = {}
    for pfn in pfns:
        families.setdefault(pfn.base, []).append(pfn)
    entries, missed = [], []
    for base, group in sorted(families.items()):
        newest = names.get(base, base)
        if newest not in functions:
            missed.append(f"{base} (no such function in cuda.h)")
            entries += [Entry(p.base, p.version, p.per_thread, "") for p in group]
            continue
        got, lost = map_family(base, group, newest, functions)
        entries += got
        missed += lost
    return sorted(entries), missed


PROC_TABLE_H = HEADER + """#pragma once

#include <cstddef>

namespace scuda::client {

// One cuGetProcAddress answer: `fn` is what `name` resolves to at `version`
// (per-thread-default-stream variants have per_thread set).
struct ProcEntry {
  const char* name;
  int version;
  bool per_thread;
  void* fn;
};

// Sorted by (name, version, per_thread).
extern const ProcEntry kProcTable[];
extern const size_t kProcTableSize;

}  // namespace scuda::client
"""


def proc_table_cc(entries: list[Entry], plans: dict[str, Plan]) -> str:
    symbols = sorted({e.symbol for e in entries if e.symbol})
    decls = [f"CUresult CUDAAPI {s}({param_list(plans[s])});" for s in symbols]
    # Stubs take no parameters: the caller's arguments are simply ignored.
    stubs = [f"CUresult CUDAAPI {e.stub()}() {{ return scuda::client::unsupported("
             f'"{e.tag()}"); }}' for e in entries if not e.symbol]
    rows = [f'    {{"{e.name}", {e.version}, {str(e.per_thread).lower()}, '
            f"reinterpret_cast<void*>(&{e.symbol or e.stub()})}}," for e in entries]
    return "\n".join([
        HEADER + "#include <cuda.h>\n",
        "// The table lists deprecated entry points too.",
        '#pragma GCC diagnostic ignored "-Wdeprecated-declarations"\n',
        '#include "client/runtime.h"',
        '#include "proc_table.h"\n',
        'extern "C" {', *decls, "}\n",
        "namespace {", *stubs, "}  // namespace\n",
        "const scuda::client::ProcEntry scuda::client::kProcTable[] = {", *rows, "};",
        f"const size_t scuda::client::kProcTableSize = {len(entries)};",
    ]) + "\n"


def report(missed: list[str]) -> None:
    if missed:
        print(f"proc table: {len(missed)} PFN versions not mapped: "
              + ", ".join(missed), file=sys.stderr)
