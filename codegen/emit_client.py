"""client_stubs.cc: the exported stand-ins for forwarded and unsupported functions."""
from __future__ import annotations

import json

from emit_tables import HEADER, arg_list, forwarded, param_list
from model import Plan

PREAMBLE = HEADER + """#include <cuda.h>
#include <cudaProfiler.h>

#include <vector>

#include "client/memory/host_memory.h"
#include "client/pools/route.h"
#include "client/runtime.h"
#include "client_gen.h"
#include "custom.h"
#include "forward.h"
#include "protocol/ops.h"

using namespace scuda::client::gen;
"""

REQUEST = {
    "scalar": "  w_.put<{ctype}>({name});",
    "handle": "  w_.u64(scuda::client::handle_id({name}));",
    "in_ptr": "  put_inout(w_, {name});",
    "inout": "  put_inout(w_, {name});",
    "out_handle": "  put_out_handle(w_, {name});",
    "in_str": "  put_str(w_, {name});",
    "in_buf": "  put_in_buf(w_, {name}, {size});",
    "out_buf": "  put_out_buf(w_, {name}, {size});",
    "in_handles": "  put_in_handles(w_, {name}, {count});",
    "in_items": "  put_in_items(w_, {name}, {count});",
    "out_handles": "  put_out_handles(w_, {name}, cap_{name});",
    "out_items": "  put_out_items(w_, {name}, cap_{name});",
}
# One-way creates: the proposed id is the result, known before any reply.
ONE_WAY_REQUEST = {"out_handle": "  const uint64_t id_{name} = put_out_handle(w_, {name});"}
ONE_WAY_RESULT = {"out_handle": "  set_out_handle({name}, id_{name});"}
REPLY = {
    "inout": "  get_inout(r_, {name});",
    "out_handle": "  get_out_handle(r_, {name});",
    "out_buf": "  get_out_buf(r_, {name}, {size});",
    "out_handles": "  get_out_handles(r_, {name}, cap_{name});",
    "out_items": "  get_out_items(r_, {name}, cap_{name});",
}


def client_stubs_cc(plans: list[Plan]) -> str:
    bodies = [forward_fn(p) for p in forwarded(plans)]
    stubs = [stub(p) for p in plans if p.handling in ("forward", "unsupported")]
    shells = [twin_shell(p) for p in twin_plans(plans)] + \
        [exported(p, f"scuda::client::custom::{p.name}({arg_list(p)})") for p in plans if p.shell]
    return "\n".join([PREAMBLE, "namespace scuda::client::forward {\n", *bodies,
                      "}  // namespace scuda::client::forward\n", *stubs, *shells])


def forward_h(plans: list[Plan]) -> str:
    decls = [f"CUresult {p.name}({param_list(p)});" for p in forwarded(plans)]
    pickers = [forward_picker(p, v) for p, v in twin_bases(plans) if p.marshalled]
    return "\n".join([
        HEADER + "#pragma once\n", "#include <cuda.h>\n#include <cudaProfiler.h>\n",
        "namespace scuda::client {\n",
        "// Which default stream an entry point's NULL stream means: the legacy",
        "// one, or the calling thread's (the _ptsz/_ptds variants).",
        "enum class DefaultStream { kLegacy, kPerThread };\n",
        "// Whether a NULL stream means the calling thread's default stream.",
        "constexpr bool per_thread(DefaultStream d) { return d == DefaultStream::kPerThread; }\n",
        "}  // namespace scuda::client\n",
        "// The generated marshalling of each function with an op: sends the",
        "// request and decodes the reply, with no pass-through check. Custom",
        "// entry points in src/client/ call these; for a function with twins",
        "// the overload taking a DefaultStream picks the variant's.",
        "namespace scuda::client::forward {\n", *decls, "", *pickers,
        "\n}  // namespace scuda::client::forward",
    ]) + "\n"


def custom_h(plans: list[Plan]) -> str:
    decls = [f"CUresult {p.name}({param_list(p)}, DefaultStream default_stream);"
             for p, _ in twin_bases(plans)] + \
        [f"CUresult {p.name}({param_list(p)});" for p in plans if p.shell]
    return "\n".join([
        HEADER + "#pragma once\n", "#include <cuda.h>\n", '#include "forward.h"\n',
        "// The hand-written bodies of the custom and local functions. Their",
        "// exported entry points are generated (client_stubs.cc): each passes",
        "// through in pass-through mode, then calls its body here; those of a",
        "// function with twins add the default stream their NULL stream means.",
        "namespace scuda::client::custom {\n", *decls,
        "\n}  // namespace scuda::client::custom",
    ]) + "\n"


def twin_plans(plans: list[Plan]) -> list[Plan]:
    return [p for p in plans if p.twins]


def twin_bases(plans: list[Plan]) -> list[tuple[Plan, Plan]]:
    """Each base function with twins and its per-thread variant; a base
    without one is an annotation error."""
    variants = {p.fn.base: p for p in plans if p.twins and p.fn.per_thread}
    bases = [p for p in plans if p.twins and not p.fn.per_thread]
    for p in bases:
        if p.name not in variants:
            raise SystemExit(f"annotations: `{p.name}` has twins but no per-thread variant")
    return [(p, variants[p.name]) for p in bases]


def forward_picker(base: Plan, variant: Plan) -> str:
    args = arg_list(base)
    return cxx_function(
        f"inline CUresult {base.name}({param_list(base)}, DefaultStream default_stream)", [
            # Qualified: the driver's own declaration of the name is found by
            # argument-dependent lookup otherwise.
            f"  return default_stream == DefaultStream::kPerThread ? forward::{variant.name}({args})",
            f"                                                     : forward::{base.name}({args});",
        ])


def twin_shell(plan: Plan) -> str:
    stream = "kPerThread" if plan.fn.per_thread else "kLegacy"
    args = ", ".join([*(p.name for p in plan.fn.params), f"scuda::client::DefaultStream::{stream}"])
    return exported(plan, f"scuda::client::custom::{plan.fn.base}({args})")


def c_string(text: str) -> str:
    """`text` as a C string literal (JSON's escapes are C's for this text)."""
    return json.dumps(text or "")


def stub(plan: Plan) -> str:
    body = f"scuda::client::forward::{plan.name}({arg_list(plan)})" \
        if plan.handling == "forward" \
        else f'scuda::client::unsupported("{plan.name}", {c_string(plan.reason)})'
    return exported(plan, body)


def exported(plan: Plan, body: str) -> str:
    """The exported entry point: pass-through first, then `body`."""
    names = ", ".join([plan.name, *[p.name for p in plan.fn.params]])
    return cxx_function(f'extern "C" CUresult CUDAAPI {plan.name}({param_list(plan)})',
                        [f"  SCUDA_PASSTHROUGH({names});", f"  return {body};"])


def forward_fn(plan: Plan) -> str:
    return cxx_function(f"CUresult {plan.name}({param_list(plan)})", forward_body(plan))


def cxx_function(head: str, lines: list[str]) -> str:
    return "\n".join([f"{head} {{", *lines, "}\n"])


def routes_by(p, k) -> str | None:
    """The Route line for a parameter that names a server (route.h), if any."""
    if k.kind == "scalar" and k.ctype == "CUdevice":
        return f"  route_.device({p.name});"
    if k.kind == "handle":
        return f"  route_.handle(scuda::client::handle_id({p.name}));"
    return None


def route_lines(plan: Plan) -> list[str]:
    """With several servers, a call goes to the server its device or handles
    name; one that names two servers is refused."""
    lines = [r for p, k in plan.params_kinds() if (r := routes_by(p, k))]
    if not lines:
        return []
    return ["  scuda::client::Route route_;", *lines,
            f'  if (!route_.ok()) return route_.refuse("{plan.name}");']


def forward_body(plan: Plan) -> list[str]:
    sizes = [f"  const size_t n_{p.name} = {k.expr};"
             for p, k in plan.params_kinds() if k.kind.endswith("_buf")]
    # An array without its count is the driver's INVALID_VALUE; sent, the
    # server would take the mismatch for a malformed request.
    sizes += [f"  if ({p.name} && !{k.expr}) return CUDA_ERROR_INVALID_VALUE;\n"
              f"  const size_t cap_{p.name} = {k.expr} ? *{k.expr} : 0;"
              for p, k in plan.params_kinds() if k.kind in ("out_handles", "out_items")]
    request = [line(REQUEST, p, k) for p, k in plan.params_kinds()]
    head = [*sizes, *route_lines(plan), "  scuda::protocol::Writer w_;"]
    if plan.submit == "one-way":
        return [*head, *[line(ONE_WAY_REQUEST, p, k) if k.kind in ONE_WAY_REQUEST else r
                         for (p, k), r in zip(plan.params_kinds(), request)],
                f"  CUresult rc_ = scuda::client::post(scuda::protocol::kOp_{plan.name}, w_);",
                "  if (rc_ != CUDA_SUCCESS) return rc_;",
                *[line(ONE_WAY_RESULT, p, k) for p, k in plan.params_kinds()
                  if k.kind in ONE_WAY_RESULT],
                "  return CUDA_SUCCESS;"]
    reply = [line(REPLY, p, k) for p, k in plan.params_kinds() if k.kind in REPLY]
    sync = ", true" if plan.submit == "sync" else ""
    return [
        *head,
        *request,
        "  std::vector<uint8_t> reply_;",
        f"  CUresult rc_ = scuda::client::call(scuda::protocol::kOp_{plan.name}, w_, &reply_{sync});",
        "  if (rc_ != CUDA_SUCCESS) return rc_;",
        "  scuda::protocol::Reader r_(reply_);",
        *reply,
        f'  return finish(r_, "{plan.name}");',
    ]


# A device address that may name the client's page-locked memory: the
# client mirrors that memory in the session and sends the mirror's address.
UVA_REQUEST = "  w_.put<CUdeviceptr>(scuda::client::device_view({name}));"


# A device travels as its number on its own server.
DEVICE_REQUEST = "  w_.put<CUdevice>(scuda::client::local_device({name}));"


def line(table: dict[str, str], p, k) -> str:
    if k.uva and table is REQUEST:
        return UVA_REQUEST.format(name=p.name)
    if table is REQUEST and k.kind == "scalar" and k.ctype == "CUdevice":
        return DEVICE_REQUEST.format(name=p.name)
    return table[k.kind].format(name=p.name, ctype=k.ctype, size=f"n_{p.name}", count=k.expr)
