"""server_handlers.cc: one request handler per forwarded function."""
from __future__ import annotations

import re

from emit_tables import HEADER, forwarded
from model import Plan

PREAMBLE = HEADER + """#include <cuda.h>
#include <cudaProfiler.h>

#include "protocol/ops.h"
#include "server/session/handler.h"
#include "server/session/session.h"
#include "server_gen.h"

using scuda::protocol::Reader;
using scuda::protocol::Writer;
using scuda::server::HandleKind;
using scuda::server::kMalformed;
using scuda::server::Session;
using namespace scuda::server::gen;
"""

DECODE = {
    "scalar": "  auto a_{name} = in.get<{ctype}>();",
    "handle": "  uint64_t a_{name}_id = in.u64();",
    "in_ptr": "  auto a_{name} = get_inout<{ctype}>(in);",
    "inout": "  auto a_{name} = get_inout<{ctype}>(in);",
    "out_handle": "  auto a_{name} = get_out_handle<{handle}>(in);",
    "in_str": "  auto a_{name} = get_str(in);",
    "in_buf": "  auto a_{name} = get_in_buf(in);",
    "out_buf": "  auto a_{name} = get_out_buf(in);",
    "in_handles": "  auto a_{name} = get_in_handles<{handle}>(in);",
    "in_items": "  auto a_{name} = get_in_items<{ctype}>(in);",
    "out_handles": "  auto a_{name} = get_out_handles<{handle}>(in);",
    "out_items": "  auto a_{name} = get_out_items<{ctype}>(in);",
}
ARG = {
    "scalar": "a_{name}",
    "handle": "a_{name}",
    "in_ptr": "a_{name}.ptr()",
    "inout": "a_{name}.ptr()",
    "out_handle": "a_{name}.ptr()",
    "in_str": "a_{name}.ptr()",
    "in_buf": "static_cast<{type}>(a_{name}.ptr())",
    "out_buf": "static_cast<{type}>(a_{name}.ptr())",
    "in_handles": "a_{name}.ptr()",
    "in_items": "a_{name}.ptr()",
    "out_handles": "a_{name}.ptr()",
    "out_items": "a_{name}.ptr()",
}
ENCODE = {
    "inout": "  put_inout(out, a_{name});",
    "out_handle": "  put_out_handle(s, out, a_{name}, HandleKind::{handle});",
    "out_buf": "  put_out_buf(out, a_{name});",
    "out_handles": "  put_out_handles(s, out, a_{name}, HandleKind::{handle});",
    "out_items": "  put_out_items(out, a_{name});",
}
ARRAYS = ("in_handles", "in_items", "out_handles", "out_items")


def fill(template: str, p, k) -> str:
    return template.format(name=p.name, ctype=k.ctype, handle=k.handle, type=p.spelling)


def server_handlers_cc(plans: list[Plan]) -> str:
    fwd = forwarded(plans)
    entries = [f'    {{scuda::protocol::kOp_{p.name}, h_{p.name}}},' for p in fwd]
    return "\n".join([
        PREAMBLE, *[handler(p) for p in fwd],
        "const scuda::server::HandlerEntry scuda::server::kGeneratedHandlers[] = {",
        *entries, "};",
        f"const size_t scuda::server::kGeneratedHandlerCount = {len(fwd)};",
    ]) + "\n"


def handler(plan: Plan) -> str:
    pk = list(plan.params_kinds())
    out = " out" if any(k.kind in ENCODE for _, k in pk) else ""
    return "\n".join([
        f"static CUresult h_{plan.name}(Session& s, Reader& in, Writer&{out}) {{",
        *[fill(DECODE[k.kind], p, k) for p, k in pk],
        "  if (!in.done()) return kMalformed;",
        *[check_size(plan, p, k) for p, k in pk if k.kind in BUFFERS],
        *[check(p, k) for kind in ("out_buf", *ARRAYS, "handle", "out_handle")
          for p, k in pk if k.kind == kind],
        *call(plan),
        *[fill(ENCODE[k.kind], p, k) for p, k in pk if k.kind in ENCODE],
        *forget(plan),
        "  return rc;",
        "}\n",
    ])


def check_size(plan: Plan, p, k) -> str:
    """A buffer must hold what the driver will read or write, by the
    annotation's byte count evaluated on the server's own decoded values: a
    client cannot make the driver go past it."""
    expr = k.expr
    for q, qk in plan.params_kinds():
        value = {"scalar": f"a_{q.name}", "inout": f"a_{q.name}.ptr()"}.get(qk.kind)
        if value:
            expr = re.sub(rf"\b{q.name}\b", value, expr)
    relation = "<" if k.kind == "in_buf" else "!="
    return f"  if (a_{p.name}.present && a_{p.name}.size {relation} size_t({expr})) return kMalformed;"


BUFFERS = ("in_buf", "out_buf", "inout_buf")


def check(p, k) -> str:
    if k.kind in ARRAYS:
        lines = [f"  if (!a_{p.name}.fits(a_{k.expr})) return kMalformed;"]
        if k.kind == "in_handles":
            lines.append(f"  if (!resolve_handles(s, &a_{p.name}, HandleKind::{k.handle})) "
                         "return CUDA_ERROR_INVALID_HANDLE;")
        if k.kind == "out_handles":
            lines.append(f"  if (!can_bind_all(s, a_{p.name})) return CUDA_ERROR_INVALID_VALUE;")
        return "\n".join(lines)
    if k.kind == "out_handle":
        return f"  if (!can_bind(s, a_{p.name})) return CUDA_ERROR_INVALID_VALUE;"
    if k.kind == "out_buf":
        return f"  if (!a_{p.name}.allocate()) return kMalformed;"
    error = "CUDA_ERROR_INVALID_CONTEXT" if k.handle == "CUcontext" else "CUDA_ERROR_INVALID_HANDLE"
    return (f"  {k.handle} a_{p.name};\n"
            f"  if (!resolve(s, a_{p.name}_id, HandleKind::{k.handle}, &a_{p.name})) return {error};")


def call(plan: Plan) -> list[str]:
    args = ", ".join(fill(ARG[k.kind], p, k) for p, k in plan.params_kinds())
    return [
        f"  if (!s.driver().{plan.name}) return CUDA_ERROR_NOT_SUPPORTED;",
        f"  CUresult rc = s.driver().{plan.name}({args});",
        "  if (rc != CUDA_SUCCESS) return rc;",
    ]


def forget(plan: Plan) -> list[str]:
    if plan.destroys is None:
        return []
    return [f"  s.handles().forget(a_{plan.destroys}_id);"]
