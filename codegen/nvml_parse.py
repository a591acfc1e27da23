"""Reads nvml.h with libclang, reusing the driver's parser and classifier."""
from __future__ import annotations

import re
from pathlib import Path

import clang.cindex as ci

import cparse
from classify import Classifier, Kind
from cparse import Function, Header, Param

# Parsed with the legacy entry points declared too (nvmlInit, nvmlDeviceGetCount,
# ...): old binaries still call them by those names.
LEGACY_DEFINE = "-DNVML_NO_UNVERSIONED_FUNC_DEFS"
LENGTH_NAME = re.compile(r"(?i)(length|size|len)$")
COUNT_POINTER_NAME = re.compile(r"(?i)(count|size)$")


def read_nvml_h(include_dir: Path) -> Header:
    tu = cparse.parse_header(include_dir / "nvml.h", include_dir, [LEGACY_DEFINE])
    found = cparse.driver_functions(tu, "nvml.h", "nvmlReturn_t")
    functions = {n: Function(n, cparse.params_of(c), False) for n, c in found.items()}
    return Header(functions, cparse.handle_types(tu, "nvml.h"),
                  cparse.error_codes(tu, "nvmlReturn_enum"), tu, None)


class NvmlClassifier(Classifier):
    """The driver's rules, plus NVML's: a writable `char*` followed by its
    unsigned length travels as an out buffer of that length; and a pointer
    beside a count pointer is taken for an array (NVML names many in the
    singular, e.g. `clocksMHz`), so it needs an annotation."""

    def pointer(self, fn: Function, p: Param) -> Kind:
        if length := string_length(fn, p):
            return Kind("out_buf", expr=length)
        kind = super().pointer(fn, p)
        if kind.kind == "inout" and beside_count_pointer(fn, p):
            return self.refuse(p, "sits beside a count pointer; needs a size annotation")
        return kind


def string_length(fn: Function, p: Param) -> str | None:
    pointee = p.type.get_pointee().get_canonical()
    if pointee.kind not in (ci.TypeKind.CHAR_S, ci.TypeKind.CHAR_U) or \
            pointee.is_const_qualified():
        return None
    at = fn.params.index(p)
    if at + 1 >= len(fn.params):
        return None
    nxt = fn.params[at + 1]
    unsigned = nxt.type.get_canonical().kind == ci.TypeKind.UINT
    return nxt.name if unsigned and LENGTH_NAME.search(nxt.name) else None


def beside_count_pointer(fn: Function, p: Param) -> bool:
    return any(q is not p and COUNT_POINTER_NAME.search(q.name) and
               q.type.get_canonical().kind == ci.TypeKind.POINTER
               for q in fn.params) and not COUNT_POINTER_NAME.search(p.name)
