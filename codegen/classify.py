"""Decides how each parameter travels: its marshalling kind."""
from __future__ import annotations

import re
from dataclasses import dataclass

import clang.cindex as ci

from cparse import Function, Param

TK = ci.TypeKind
PLAIN_KINDS = {
    TK.BOOL, TK.CHAR_U, TK.UCHAR, TK.CHAR16, TK.CHAR32, TK.USHORT, TK.UINT,
    TK.ULONG, TK.ULONGLONG, TK.UINT128, TK.CHAR_S, TK.SCHAR, TK.WCHAR,
    TK.SHORT, TK.INT, TK.LONG, TK.LONGLONG, TK.INT128, TK.FLOAT, TK.DOUBLE,
    TK.LONGDOUBLE, TK.ENUM,
}
CHAR_KINDS = {TK.CHAR_S, TK.CHAR_U, TK.SCHAR}
COUNT_NAME = re.compile(r"^(num[A-Z_]|nb[A-Z]|count$|n[A-Z])|[Cc]ount$")
BUFFER_NOTE = re.compile(r"^(in|out|inout)\[(.+)\]$")
# Arrays of handles or plain items: in_*[scalar count parameter], or
# out_*[integer pointer parameter holding the capacity in and the count out].
ARRAY_NOTE = re.compile(r"^(in|out)_(handles|items)\[(\w+)\]$")


@dataclass(frozen=True)
class Kind:
    """kind is one of: scalar, handle, in_ptr, inout, out_handle, in_str,
    in_buf, out_buf, inout_buf (NVML only), in_handles, out_handles,
    in_items, out_items, or unsupported (then `reason` says why)."""
    kind: str
    ctype: str = ""      # value type (scalar, pointee of in_ptr/inout)
    handle: str = ""     # handle type name
    expr: str = ""       # byte count of a buffer
    reason: str = ""
    uva: bool = False    # scalar CUdeviceptr the client passes through device_view

    def describe(self) -> str:
        return f"{self.kind}:{self.ctype}:{self.handle}:{self.expr}"


def strip_const(spelling: str) -> str:
    return re.sub(r"^const\s+", "", spelling)


def handle_name(t: ci.Type, handles: set[str]) -> str | None:
    """The handle typedef `t` names, following typedef chains."""
    while t.kind in (TK.TYPEDEF, TK.ELABORATED):
        if t.kind == TK.ELABORATED:
            t = t.get_named_type()
            continue
        decl = t.get_declaration()
        if decl.spelling in handles:
            return decl.spelling
        t = decl.underlying_typedef_type
    return None


def is_plain(t: ci.Type) -> bool:
    """Integers, floats, enums and structs of those: safe to copy as bytes."""
    c = t.get_canonical()
    if c.kind in PLAIN_KINDS:
        return True
    if c.kind == TK.CONSTANTARRAY:
        return is_plain(c.element_type)
    if c.kind == TK.RECORD and c.get_size() > 0:
        return all(is_plain(f.type) for f in c.get_fields())
    return False


class Classifier:
    def __init__(self, handles: set[str]):
        self.handles = handles

    def param(self, fn: Function, p: Param, note: str | None) -> Kind:
        if note is not None:
            return self.annotated(p, note)
        if handle_name(p.type, self.handles) is None and \
                p.type.get_canonical().kind == TK.POINTER:
            return self.pointer(fn, p)
        return self.value(p)

    def annotated(self, p: Param, note: str) -> Kind:
        if note == "address":  # an address on the server (device memory): its value travels
            return Kind("scalar", strip_const(p.spelling))
        if note == "uva":  # device memory, or (under UVA) the client's page-locked memory
            if strip_const(p.spelling) != "CUdeviceptr":
                raise SystemExit(f"`{p.name}`: uva needs a CUdeviceptr")
            return Kind("scalar", "CUdeviceptr", uva=True)
        if note == "inout":
            pointee = p.type.get_pointee()
            if not is_plain(pointee):
                raise SystemExit(f"`{p.name}`: inout needs a pointer to plain data")
            return Kind("inout", strip_const(pointee.spelling))
        if m := ARRAY_NOTE.match(note):
            return self.array(p, m.group(1), m.group(2), m.group(3))
        m = BUFFER_NOTE.match(note)
        if not m:
            raise SystemExit(f"`{p.name}`: bad annotation {note!r}")
        return Kind(f"{m.group(1)}_buf", expr=m.group(2))

    def array(self, p: Param, direction: str, what: str, count: str) -> Kind:
        pointee = p.type.get_pointee()
        kind = f"{direction}_{what}"
        if what == "handles":
            h = handle_name(pointee, self.handles)
            if h is None:
                raise SystemExit(f"`{p.name}`: {kind} needs a pointer to handles")
            return Kind(kind, handle=h, expr=count)
        if not is_plain(pointee):
            raise SystemExit(f"`{p.name}`: {kind} needs a pointer to plain data")
        return Kind(kind, strip_const(pointee.spelling), expr=count)

    def value(self, p: Param) -> Kind:
        if h := handle_name(p.type, self.handles):
            return Kind("handle", handle=h)
        if is_plain(p.type):
            return Kind("scalar", strip_const(p.spelling))
        return self.refuse(p, "is a struct holding pointers or handles")

    def pointer(self, fn: Function, p: Param) -> Kind:
        pointee = p.type.get_pointee()
        if pointee.kind == TK.INVALID:  # a typedef of a pointer, e.g. CUhostFn
            pointee = p.type.get_canonical().get_pointee()
        canon = pointee.get_canonical()
        const = canon.is_const_qualified()
        if canon.kind in (TK.FUNCTIONPROTO, TK.FUNCTIONNOPROTO):
            return self.refuse(p, "is a host function pointer")
        if canon.kind == TK.VOID:
            return self.refuse(p, "needs a size annotation")
        if canon.kind in CHAR_KINDS:
            if const:
                return Kind("in_str")
            return self.refuse(p, "is a writable char buffer; needs a size annotation")
        if h := handle_name(pointee, self.handles):
            if const or looks_like_array(fn, p, handle=True):
                return self.refuse(p, "is an array of handles")
            return Kind("out_handle", handle=h)
        if is_plain(pointee):
            if looks_like_array(fn, p):
                return self.refuse(p, "looks like an array; needs a size annotation")
            return Kind("in_ptr" if const else "inout", strip_const(pointee.spelling))
        if canon.kind == TK.POINTER:
            return self.refuse(p, "is a pointer to a pointer")
        return self.refuse(p, "points to a struct holding pointers or handles")

    @staticmethod
    def refuse(p: Param, why: str) -> Kind:
        return Kind("unsupported", reason=f"parameter `{p.name}` ({p.spelling}) {why}")


def looks_like_array(fn: Function, p: Param, handle: bool = False) -> bool:
    """A pointer named in the plural, or any handle pointer, next to a count."""
    counts = [q for q in fn.params if q is not p and COUNT_NAME.search(q.name)]
    if not counts:
        return False
    plural = p.name.endswith("s") and not p.name.endswith("ss")
    by_pointer = any(q.type.get_canonical().kind == TK.POINTER for q in counts)
    return plural or (handle and by_pointer)
