#!/usr/bin/env python3
"""Generates scuda's driver-API glue from cuda.h.

  generate.py --cuda-include DIR --annotations FILE --out DIR [--coverage FILE]
              [--nvml-include DIR [--nvml-annotations FILE] [--nvml-coverage FILE]]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import annotations  # noqa: E402
import cparse  # noqa: E402
import coverage  # noqa: E402
import emit_client  # noqa: E402
import emit_server  # noqa: E402
import emit_tables  # noqa: E402
import model  # noqa: E402
import nvml_emit  # noqa: E402
import nvml_parse  # noqa: E402
import proc_table  # noqa: E402

SUPPORT_HEADERS = ("client_gen.h", "server_gen.h")
NVML_SUPPORT_HEADERS = ("nvml_client_gen.h", "nvml_server_gen.h")
NVML_TITLE = ("NVML", "nvml.h", " (legacy unversioned entry points included)")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--cuda-include", type=Path, required=True)
    ap.add_argument("--annotations", type=Path, default=HERE / "annotations.toml")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--coverage", type=Path)
    ap.add_argument("--nvml-include", type=Path, help="folder of nvml.h")
    ap.add_argument("--nvml-annotations", type=Path, default=HERE / "nvml_annotations.toml")
    ap.add_argument("--nvml-coverage", type=Path)
    return ap.parse_args(argv)


def write(path: Path, text: str) -> None:
    """Writes only on change, so the build does not recompile needlessly."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


def outputs(header, plans, entries, adapters, nvml=None) -> dict[str, str]:
    """`nvml`: (header, plans) of nvml.h, whose handles and signatures join
    the driver's handle kinds and API hash."""
    by_name = {p.name: p for p in plans}
    handles = header.handles + (nvml[0].handles if nvml else [])
    nvml_hashed = nvml_emit.signatures(nvml[1]) if nvml else ""
    files = {
        "driver_api.inc": emit_tables.driver_api_inc(plans),
        "api_ops.h": emit_tables.api_ops_h(plans, nvml_hashed),
        "api_ops.cc": emit_tables.api_ops_cc(plans),
        "handle_kinds.h": emit_tables.handle_kinds_h(handles),
        "client_stubs.cc": emit_client.client_stubs_cc(plans),
        "forward.h": emit_client.forward_h(plans),
        "custom.h": emit_client.custom_h(plans),
        "cuda_errors.inc": emit_tables.cuda_errors_inc(header.errors),
        "server_handlers.cc": emit_server.server_handlers_cc(plans),
        "proc_table.h": proc_table.PROC_TABLE_H,
        "proc_table.cc": proc_table.proc_table_cc(entries, by_name, header.functions, adapters),
    }
    for name in SUPPORT_HEADERS:
        files[name] = (HERE / "support" / name).read_text()
    if nvml:
        files.update(nvml_emit.outputs(*nvml))
        for name in NVML_SUPPORT_HEADERS:
            files[name] = (HERE / "support" / name).read_text()
    return files


def plan_nvml(args):
    header = nvml_parse.read_nvml_h(args.nvml_include)
    notes = annotations.load(args.nvml_annotations, header.functions,
                             annotations.HANDLINGS + model.NVML_HANDLINGS, "nvml.h")
    classifier = nvml_parse.NvmlClassifier(set(header.handles))
    return header, model.plan_all(header, notes, classifier)


def main(argv=None) -> int:
    args = parse_args(argv)
    header = cparse.read_cuda_h(args.cuda_include)
    notes = annotations.load(args.annotations, header.functions)
    plans = model.plan_all(header, notes)
    pfns = (cparse.read_pfn_typedefs(args.cuda_include)
            + cparse.read_pfn_typedefs(args.cuda_include, "cudaProfilerTypedefs.h")
            + cparse.read_other_pfn_names(args.cuda_include))
    adapters = annotations.load_legacy(args.annotations)
    entries, missed = proc_table.build(pfns, header.functions,
                                       args.cuda_include / "cuda.h", adapters)
    proc_table.report(missed)
    nvml = plan_nvml(args) if args.nvml_include else None
    for name, text in outputs(header, plans, entries, adapters, nvml).items():
        write(args.out / name, text)
    if args.coverage:
        write(args.coverage, coverage.coverage_md(plans))
    if nvml and args.nvml_coverage:
        write(args.nvml_coverage, coverage.coverage_md(nvml[1], NVML_TITLE))
    return 0


if __name__ == "__main__":
    sys.exit(main())
