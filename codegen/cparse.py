"""Reads cuda.h and cudaTypedefs.h with libclang."""
from __future__ import annotations

import functools
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import clang.cindex as ci

PER_THREAD_DEFINE = "-DCUDA_API_PER_THREAD_DEFAULT_STREAM"
PER_THREAD_SUFFIXES = ("_ptsz", "_ptds")


@dataclass(frozen=True)
class Param:
    name: str
    type: ci.Type

    @property
    def spelling(self) -> str:
        return self.type.spelling

    @property
    def canonical(self) -> str:
        return self.type.get_canonical().spelling


@dataclass(frozen=True)
class Function:
    name: str
    params: tuple[Param, ...]
    per_thread: bool

    @property
    def base(self) -> str:
        """The name whose handling and annotations a per-thread variant shares."""
        for suffix in PER_THREAD_SUFFIXES:
            if self.per_thread and self.name.endswith(suffix):
                return self.name[: -len(suffix)]
        return self.name

    def signature_key(self) -> tuple[str, ...]:
        return tuple(p.canonical for p in self.params)


@functools.cache
def builtin_include_dir() -> str | None:
    """Where stddef.h and friends live; the pip libclang ships no headers."""
    for cmd in (["clang", "-print-resource-dir"], ["gcc", "-print-file-name=include"]):
        if not shutil.which(cmd[0]):
            continue
        out = subprocess.run(cmd, capture_output=True, text=True).stdout.strip()
        path = Path(out) / "include" if cmd[0] == "clang" else Path(out)
        if (path / "stddef.h").exists():
            return str(path)
    return None


def parse_header(header: Path, include_dir: Path, extra: list[str]) -> ci.TranslationUnit:
    args = ["-x", "c++", "-std=c++17", f"-I{include_dir}", *extra]
    if builtin := builtin_include_dir():
        args += ["-isystem", builtin]
    tu = ci.Index.create().parse(str(header), args=args)
    errors = [d for d in tu.diagnostics if d.severity >= ci.Diagnostic.Error]
    if errors:
        raise SystemExit(f"libclang could not parse {header}: {errors[0]}")
    return tu


def top_level(cursor: ci.Cursor):
    """Top-level declarations, looking through extern "C" blocks."""
    for child in cursor.get_children():
        if child.kind == ci.CursorKind.LINKAGE_SPEC:
            yield from top_level(child)
        else:
            yield child


def in_file(cursor: ci.Cursor, name: str) -> bool:
    loc = cursor.location.file
    return loc is not None and Path(loc.name).name == name


def params_of(cursor: ci.Cursor) -> tuple[Param, ...]:
    args = list(cursor.get_arguments())
    return tuple(Param(a.spelling or f"p{i}", a.type) for i, a in enumerate(args))


def driver_functions(tu: ci.TranslationUnit, header: str = "cuda.h",
                     result: str = "CUresult") -> dict[str, ci.Cursor]:
    found = {}
    for c in top_level(tu.cursor):
        if c.kind != ci.CursorKind.FUNCTION_DECL or not in_file(c, header):
            continue
        if c.is_definition() or c.result_type.spelling != result:
            continue
        found[c.spelling] = c
    return found


def handle_types(tu: ci.TranslationUnit, header: str = "cuda.h") -> list[str]:
    """Typedef names of pointers to structs: the driver's opaque handles."""
    names = []
    for c in top_level(tu.cursor):
        if c.kind != ci.CursorKind.TYPEDEF_DECL or not in_file(c, header):
            continue
        under = c.underlying_typedef_type.get_canonical()
        if under.kind == ci.TypeKind.POINTER and \
                under.get_pointee().kind == ci.TypeKind.RECORD:
            names.append(c.spelling)
    return names


def error_codes(tu: ci.TranslationUnit, enum: str = "cudaError_enum") -> list[tuple[str, str]]:
    """The result enum's enumerators with the first sentence of their doc comment."""
    for c in top_level(tu.cursor):
        if c.kind == ci.CursorKind.ENUM_DECL and c.spelling == enum:
            return [(e.spelling, first_sentence(e.brief_comment or e.spelling))
                    for e in c.get_children()
                    if e.kind == ci.CursorKind.ENUM_CONSTANT_DECL]
    raise SystemExit(f"the header has no {enum}")


def first_sentence(text: str) -> str:
    text = " ".join(text.split())
    return text.split(". ")[0].rstrip(".")


@dataclass
class Header:
    functions: dict[str, Function]
    handles: list[str]
    errors: list[tuple[str, str]]
    tu: ci.TranslationUnit
    pt_tu: ci.TranslationUnit


# The profiler's entry points live in a header of their own beside cuda.h;
# the driver exports them like the rest, and programs find them by name.
EXTRA_DRIVER_HEADERS = ("cudaProfiler.h",)


def read_cuda_h(include_dir: Path) -> Header:
    header = include_dir / "cuda.h"
    plain = parse_header(header, include_dir, [])
    per_thread = parse_header(header, include_dir, [PER_THREAD_DEFINE])
    base = driver_functions(plain)
    for extra in EXTRA_DRIVER_HEADERS:
        base.update(driver_functions(parse_header(include_dir / extra, include_dir, []), extra))
    functions = {n: Function(n, params_of(c), False) for n, c in base.items()}
    for name, c in driver_functions(per_thread).items():
        if name not in base:
            functions[name] = Function(name, params_of(c), True)
    return Header(functions, handle_types(plain), error_codes(plain), plain, per_thread)


@dataclass(frozen=True)
class Pfn:
    base: str
    version: int
    per_thread: bool
    arg_types: tuple[str, ...]


OTHER_TYPEDEF_HEADERS = ("cudaGLTypedefs.h", "cudaEGLTypedefs.h", "cudaVDPAUTypedefs.h")


def read_other_pfn_names(include_dir: Path) -> list[Pfn]:
    """Entry points of the graphics-interop headers, by name and version
    only: scuda serves none of them, but answers their lookups."""
    pattern = re.compile(r"\*\s*PFN_(cu\w+?)_v(\d+)(_ptsz|_ptds)?\s*\)")
    found = set()
    for name in OTHER_TYPEDEF_HEADERS:
        for m in pattern.finditer((include_dir / name).read_text()):
            found.add(Pfn(m.group(1), int(m.group(2)), bool(m.group(3)), ()))
    return sorted(found, key=lambda p: (p.base, p.version, p.per_thread))


def read_pfn_typedefs(include_dir: Path, header: str = "cudaTypedefs.h") -> list[Pfn]:
    """PFN_<name>_v<version>[_ptsz|_ptds] typedefs, the legacy section's
    (older versions the driver still exports) included."""
    pattern = re.compile(r"^PFN_(cu\w+?)_v(\d+)(_ptsz|_ptds)?$")
    tu = parse_header(include_dir / header, include_dir,
                      ["-D__CUDA_API_VERSION_INTERNAL"])
    pfns = []
    for c in top_level(tu.cursor):
        m = pattern.match(c.spelling)
        if c.kind != ci.CursorKind.TYPEDEF_DECL or not m:
            continue
        proto = c.underlying_typedef_type.get_canonical().get_pointee()
        args = tuple(t.get_canonical().spelling for t in proto.argument_types())
        pfns.append(Pfn(m.group(1), int(m.group(2)), bool(m.group(3)), args))
    return pfns
