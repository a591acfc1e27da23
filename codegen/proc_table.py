"""proc_table.h/.cc: what cuGetProcAddress hands out, by (name, version)."""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, replace
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
    knows and cudart's start-up asks for old ones too. `driver_name` is the
    symbol NVIDIA's libcuda exports for this version, which libraries also
    find with dlsym (cuBLAS asks for cuCtxPushCurrent, cuGraphInstantiate…)."""
    name: str
    version: int
    per_thread: bool
    symbol: str
    driver_name: str = ""

    def tag(self) -> str:
        return f"{self.name}@{self.version}{' (per-thread)' if self.per_thread else ''}"

    def key(self) -> str:
        return f"{self.name}@{self.version}{'_pt' if self.per_thread else ''}"

    def stub(self) -> str:
        return f"scuda_unserved_{self.name}_{self.version}{'_pt' if self.per_thread else ''}"

    def target(self) -> str:
        return self.symbol or self.stub()


def renames(cuda_h: Path, functions: dict[str, Function]) -> dict[str, str]:
    """cuda.h's `#define cuX cuX_v2` table, limited to the plain spellings."""
    found = {}
    for m in RENAME.finditer(cuda_h.read_text()):
        if m.group(2) in functions and not functions[m.group(2)].per_thread:
            found.setdefault(m.group(1), m.group(2))
    return found


def driver_names(base: str, newest: str, count: int, functions: dict[str, Function]) -> list[str]:
    """The driver's exported symbols for `base`, newest first: ..., base_v2,
    base. When cuda.h renames `base` to another stem (cuGraphInstantiate to
    cuGraphInstantiateWithFlags), one per PFN version of `base`."""
    stem, number = SUFFIX.match(newest).groups()
    if stem != base:
        top = count
    else:
        declared = [int(SUFFIX.match(n).group(2) or 1) for n in functions
                    if SUFFIX.match(n).group(1) == base and not functions[n].per_thread]
        top = max([int(number or 1), *declared])
    return [base if n == 1 else f"{base}_v{n}" for n in range(top, 0, -1)]


def per_thread_name(name: str, base: str, functions: dict[str, Function]) -> str:
    """`name`'s per-thread-default-stream symbol: the declared one, else the
    suffix its family uses."""
    for suffix in ("_ptsz", "_ptds"):
        if name + suffix in functions:
            return name + suffix
    for suffix in ("_ptsz", "_ptds"):
        if any(n.startswith(base) and n.endswith(suffix) for n in functions):
            return name + suffix
    return ""


def map_family(base: str, pfns: list[Pfn], newest: str, functions: dict[str, Function],
               adapters: dict[str, str]) -> tuple[list[Entry], list[str]]:
    entries, missed = [], []
    ordered = sorted(pfns, key=lambda p: p.version, reverse=True)
    count = len({p.version for p in pfns if not p.per_thread})
    raw = driver_names(base, newest, count, functions)
    for per_thread in (False, True):
        group = [p for p in ordered if p.per_thread == per_thread]
        names = [per_thread_name(n, base, functions) if per_thread else n for n in raw]
        for pfn, name in zip(group, names + [""] * len(group)):
            symbol = name if name in functions else same_abi(pfn, names, functions)
            add(entries, missed, pfn, symbol, functions, adapters, name)
    return entries, missed


def same_abi(pfn: Pfn, names: list[str], functions: dict[str, Function]) -> str:
    """A declared variant with exactly the old version's parameters: cuda.h
    dropped the old symbol, but the same call serves it (cudart's start-up
    calls e.g. cuDeviceGetUuid@9020)."""
    for name in names:
        if name in functions and functions[name].signature_key() == pfn.arg_types:
            return name
    return ""


def add(entries, missed, pfn: Pfn, symbol: str, functions, adapters: dict[str, str],
        driver_name: str) -> None:
    entry = Entry(pfn.base, pfn.version, pfn.per_thread, "", driver_name)
    tag = entry.key()
    if symbol and functions[symbol].signature_key() != pfn.arg_types:
        tag += f" (signature differs from {symbol})"
        symbol = ""
    symbol = symbol or adapters.get(entry.key(), "")
    if not symbol:
        missed.append(tag)
    entries.append(replace(entry, symbol=symbol))


def build(pfns: list[Pfn], functions: dict[str, Function], cuda_h: Path,
          adapters: dict[str, str]) -> tuple[list[Entry], list[str]]:
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
        got, lost = map_family(base, group, newest, functions, adapters)
        entries += got
        missed += lost
    return sorted(entries), missed


def exports(entries: list[Entry], functions: dict[str, Function]) -> dict[str, str]:
    """Driver symbols cuda.h no longer declares (so nothing else defines
    them), each to the function its version resolves to."""
    found = {}
    for e in entries:
        if e.driver_name and e.driver_name not in functions:
            found.setdefault(e.driver_name, e.target())
    return found


def trampoline(name: str, target: str) -> str:
    # A bare jump keeps every argument register as the caller set it.
    return (f'asm(".text\\n.globl {name}\\n.type {name}, @function\\n{name}:\\n'
            f'  jmp {target}@PLT\\n.size {name}, .-{name}\\n");')


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


def proc_table_cc(entries: list[Entry], plans: dict[str, Plan],
                  functions: dict[str, Function], adapters: dict[str, str]) -> str:
    handwritten = set(adapters.values())
    symbols = sorted({e.symbol for e in entries if e.symbol and e.symbol not in handwritten})
    decls = [f"CUresult CUDAAPI {s}({param_list(plans[s])});" for s in symbols]
    # Stubs take no parameters: the caller's arguments are simply ignored.
    stubs = [f"__attribute__((visibility(\"hidden\"))) CUresult CUDAAPI {e.stub()}() "
             f'{{ return scuda::client::unsupported("{e.tag()}"); }}' for e in entries if not e.symbol]
    rows = [f'    {{"{e.name}", {e.version}, {str(e.per_thread).lower()}, '
            f"reinterpret_cast<void*>(&{e.target()})}}," for e in entries]
    jumps = [trampoline(name, target) for name, target in sorted(exports(entries, functions).items())]
    return "\n".join([
        HEADER + "#include <cuda.h>\n#include <cudaProfiler.h>\n",
        "// The table lists deprecated entry points too.",
        '#pragma GCC diagnostic ignored "-Wdeprecated-declarations"\n',
        '#include "client/legacy_entry_points.h"',
        '#include "client/runtime.h"',
        '#include "proc_table.h"\n',
        'extern "C" {', *decls, "", *stubs, "}\n",
        "// The driver's older symbols, for callers that dlsym them.",
        *jumps, "",
        "const scuda::client::ProcEntry scuda::client::kProcTable[] = {", *rows, "};",
        f"const size_t scuda::client::kProcTableSize = {len(entries)};",
    ]) + "\n"


def report(missed: list[str]) -> None:
    if missed:
        print(f"proc table: {len(missed)} PFN versions not mapped: "
              + ", ".join(missed), file=sys.stderr)
