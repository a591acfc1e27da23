"""Runs codegen/generate.py against the installed cuda.h and checks facts."""
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
GENERATOR = ROOT / "codegen" / "generate.py"
ANNOTATIONS = ROOT / "codegen" / "annotations.toml"
CUDA_INCLUDE = Path("/usr/local/cuda/include")

pytestmark = pytest.mark.skipif(not (CUDA_INCLUDE / "cuda.h").exists(),
                                reason="needs the CUDA headers")


def generate(out: Path, annotations: Path = ANNOTATIONS) -> subprocess.CompletedProcess:
    cmd = [sys.executable, str(GENERATOR), "--cuda-include", str(CUDA_INCLUDE),
           "--annotations", str(annotations), "--out", str(out),
           "--coverage", str(out / "coverage.md")]
    return subprocess.run(cmd, capture_output=True, text=True)


@pytest.fixture(scope="module")
def gen(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("gen")
    result = generate(out)
    assert result.returncode == 0, result.stderr
    return out


def stub(text: str, name: str) -> str:
    """The body of one generated function, up to its closing brace."""
    m = re.search(rf"\b{name}\(.*?\n}}\n", text, re.S)
    assert m, f"{name} not generated"
    return m.group(0)


def coverage_row(gen: Path, name: str) -> str:
    for line in (gen / "coverage.md").read_text().splitlines():
        if line.startswith(f"| `{name}` |"):
            return line
    raise AssertionError(f"{name} missing from coverage")


def test_mem_alloc_forwards_its_output_as_inout_without_annotation(tmp_path):
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    assert generate(tmp_path, empty).returncode == 0
    client = stub((tmp_path / "client_stubs.cc").read_text(), "cuMemAlloc_v2")
    assert "put_inout(w_, dptr);" in client
    assert "get_inout(r_, dptr);" in client
    assert "kOp_cuMemAlloc_v2 =" in (tmp_path / "api_ops.h").read_text()


def test_custom_mem_alloc_gets_forward_marshalling_and_a_shell(gen):
    assert "| custom |" in coverage_row(gen, "cuMemAlloc_v2")
    assert "kOp_cuMemAlloc_v2 =" in (gen / "api_ops.h").read_text()
    assert "CUresult cuMemAlloc_v2(" in (gen / "forward.h").read_text()
    shell = stub((gen / "client_stubs.cc").read_text(), "CUDAAPI cuMemAlloc_v2")
    assert "SCUDA_PASSTHROUGH(cuMemAlloc_v2, dptr, bytesize);" in shell
    assert "return scuda::client::custom::cuMemAlloc_v2(dptr, bytesize);" in shell
    assert "CUresult cuMemAlloc_v2(CUdeviceptr * dptr, size_t bytesize);" in \
        (gen / "custom.h").read_text()


def test_local_functions_get_no_op_but_a_shell(gen):
    assert "kOp_cuInit " not in (gen / "api_ops.h").read_text()
    shell = stub((gen / "client_stubs.cc").read_text(), "CUDAAPI cuInit")
    assert "SCUDA_PASSTHROUGH(cuInit, Flags);" in shell
    assert "return scuda::client::custom::cuInit(Flags);" in shell


def test_shell_false_keeps_the_entry_point_hand_written(gen):
    client = (gen / "client_stubs.cc").read_text()
    assert "cuGetProcAddress_v2(" not in client
    assert "cuGetProcAddress_v2(" not in (gen / "custom.h").read_text()


def test_a_custom_function_with_a_per_thread_variant_needs_twins(tmp_path):
    assert "annotate its base with twins" in refusal(
        tmp_path, '[functions.cuStreamQuery]\nhandling = "custom"\n')


def test_shell_false_only_for_custom_or_local(tmp_path):
    assert "is not custom or local" in refusal(
        tmp_path, '[functions.cuStreamQuery]\nhandling = "forward"\nshell = false\n')


def test_stream_create_binds_an_out_handle(gen):
    handler = stub((gen / "server_handlers.cc").read_text(), "h_cuStreamCreate")
    assert "get_out_handle<CUstream>(in)" in handler
    assert "can_bind(s, a_phStream)" in handler
    assert "HandleKind::CUstream" in handler


def test_stream_destroy_forgets_the_handle(gen):
    handler = stub((gen / "server_handlers.cc").read_text(), "h_cuStreamDestroy_v2")
    assert "s.handles().forget(a_hStream_id);" in handler


def test_host_function_pointer_is_unsupported_without_annotation(tmp_path):
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    assert generate(tmp_path, empty).returncode == 0
    row = coverage_row(tmp_path, "cuOccupancyMaxPotentialBlockSize")
    assert "| unsupported |" in row
    assert "`blockSizeToDynamicSMemSize` (CUoccupancyB2DSize) is a host function pointer" in row
    stubs = (tmp_path / "client_stubs.cc").read_text()
    assert 'unsupported("cuOccupancyMaxPotentialBlockSize", "parameter' in stubs


def test_every_unsupported_function_has_a_written_reason(gen):
    automatic = ("needs a size annotation", "is a pointer to a pointer", "is an array of handles",
                 "points to a struct holding", "is a host function pointer", "looks like an array")
    rows = [line for line in (gen / "coverage.md").read_text().splitlines()
            if "| unsupported |" in line and any(a in line for a in automatic)]
    assert rows == []


def test_per_thread_variant_is_in_the_proc_table(gen):
    table = (gen / "proc_table.cc").read_text()
    assert ('{"cuMemcpyHtoDAsync", 7000, true, '
            'reinterpret_cast<void*>(&cuMemcpyHtoDAsync_v2_ptsz)}') in table
    assert ('{"cuMemcpyHtoDAsync", 3020, false, '
            'reinterpret_cast<void*>(&cuMemcpyHtoDAsync_v2)}') in table


def test_legacy_abi_versions_resolve_to_stubs_that_say_so(gen):
    table = (gen / "proc_table.cc").read_text()
    assert ('{"cuMemcpyHtoD", 2000, false, '
            'reinterpret_cast<void*>(&scuda_unserved_cuMemcpyHtoD_2000)}') in table
    assert 'unsupported("cuMemcpyHtoD@2000")' in table
    assert '{"cuGetProcAddress", 12000, false, reinterpret_cast<void*>(&cuGetProcAddress_v2)}' in table


def test_legacy_abis_with_adapters_resolve_to_them(gen):
    table = (gen / "proc_table.cc").read_text()
    assert ('{"cuGetProcAddress", 11030, false, '
            'reinterpret_cast<void*>(&scuda_legacy_cuGetProcAddress)}') in table
    assert ('{"cuStreamGetCaptureInfo", 11030, true, '
            'reinterpret_cast<void*>(&scuda_legacy_cuStreamGetCaptureInfo_v2_ptsz)}') in table


def test_old_driver_symbols_are_exported_as_jumps(gen):
    table = (gen / "proc_table.cc").read_text()
    assert "cuCtxPushCurrent:\\n  jmp cuCtxPushCurrent_v2@PLT" in table
    assert "cuStreamGetCaptureInfo_v2:\\n  jmp scuda_legacy_cuStreamGetCaptureInfo_v2@PLT" in table
    assert "cuMemcpyHtoD:\\n  jmp scuda_unserved_cuMemcpyHtoD_2000@PLT" in table
    assert ".globl cuCtxPushCurrent_v2\\n" not in table  # declared in cuda.h: ours already


def test_old_versions_with_the_same_parameters_share_the_new_symbol(gen):
    table = (gen / "proc_table.cc").read_text()
    assert '{"cuDeviceGetUuid", 9020, false, reinterpret_cast<void*>(&cuDeviceGetUuid_v2)}' in table


def test_graphics_interop_lookups_are_answered(gen):
    table = (gen / "proc_table.cc").read_text()
    assert '{"cuGLInit", 2000, false, reinterpret_cast<void*>(&scuda_unserved_cuGLInit_2000)}' in table


def test_handle_kinds_cover_the_opaque_handles(gen):
    kinds = (gen / "handle_kinds.h").read_text()
    for name in ("CUcontext", "CUstream", "CUgraphExec", "CUlibrary", "CUkernel"):
        assert f"  {name}," in kinds


def test_every_local_and_custom_name_exists(gen):
    with open(ANNOTATIONS, "rb") as f:
        table = tomllib.load(f)["functions"]
    declared = set(re.findall(r"^SCUDA_DRIVER_FN\((\w+),",
                              (gen / "driver_api.inc").read_text(), re.M))
    special = [n for n, e in table.items() if e.get("handling") in ("local", "custom")]
    assert len(special) >= 50
    assert set(special) <= declared


def test_every_function_naming_a_library_is_hand_written(gen):
    """Library loads do not wait (src/client/modules/library_loads.cc), so whatever
    names a library calls library_ready first: no generated stub may."""
    rows = re.findall(r"^SCUDA_DRIVER_FN\((\w+), \(([^)]*)\)",
                      (gen / "driver_api.inc").read_text(), re.M)
    naming = [name for name, params in rows if re.search(r"\bCUlibrary \w", params)]
    assert {"cuLibraryGetKernel", "cuLibraryUnload", "cuLibraryGetModule"} <= set(naming)
    for name in naming:
        assert "| forwarded |" not in coverage_row(gen, name), name


def test_unknown_annotation_is_an_error(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[functions.cuNoSuchThing]\nhandling = "local"\n')
    result = generate(tmp_path, bad)
    assert result.returncode != 0
    assert "cuNoSuchThing" in result.stderr


def test_output_is_byte_identical_across_runs(gen, tmp_path):
    assert generate(tmp_path).returncode == 0
    names = sorted(p.name for p in gen.iterdir())
    assert names == sorted(p.name for p in tmp_path.iterdir())
    for name in names:
        assert (gen / name).read_bytes() == (tmp_path / name).read_bytes(), name


def test_out_handle_arrays_are_checked_against_their_count_and_bound(gen):
    handler = stub((gen / "server_handlers.cc").read_text(), "h_cuGraphGetNodes")
    assert "get_out_handles<CUgraphNode>(in)" in handler
    assert "if (!a_nodes.fits(a_numNodes)) return kMalformed;" in handler
    assert "can_bind_all(s, a_nodes)" in handler
    assert "put_out_handles(s, out, a_nodes, HandleKind::CUgraphNode);" in handler
    client = stub((gen / "client_stubs.cc").read_text(), "cuGraphGetNodes")
    assert "const size_t cap_nodes = numNodes ? *numNodes : 0;" in client
    assert "get_out_handles(r_, nodes, cap_nodes);" in client


def test_in_handle_arrays_are_resolved_and_sized_by_their_count(gen):
    handler = stub((gen / "server_handlers.cc").read_text(), "h_cuGraphAddDependencies_v2")
    assert "if (!a_from.fits(a_numDependencies)) return kMalformed;" in handler
    assert "resolve_handles(s, &a_from, HandleKind::CUgraphNode)" in handler
    assert "if (!a_edgeData.fits(a_numDependencies)) return kMalformed;" in handler


def test_an_array_count_must_be_a_parameter_of_the_right_kind(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[functions.cuGraphGetNodes.params]\nnodes = "out_handles[hGraph]"\n')
    result = generate(tmp_path, bad)
    assert result.returncode != 0
    assert "needs a count parameter of kind inout" in result.stderr


def test_twins_get_both_shells_each_naming_its_default_stream(gen):
    client = (gen / "client_stubs.cc").read_text()
    base = stub(client, "CUDAAPI cuStreamQuery")
    twin = stub(client, "CUDAAPI cuStreamQuery_ptsz")
    assert "SCUDA_PASSTHROUGH(cuStreamQuery, hStream);" in base
    assert "custom::cuStreamQuery(hStream, scuda::client::DefaultStream::kLegacy)" in base
    assert "SCUDA_PASSTHROUGH(cuStreamQuery_ptsz, hStream);" in twin
    assert "custom::cuStreamQuery(hStream, scuda::client::DefaultStream::kPerThread)" in twin
    # _ptds variants too, and the hand-written body is declared once.
    assert "DefaultStream::kPerThread)" in stub(client, "CUDAAPI cuMemcpyHtoD_v2_ptds")
    custom = (gen / "custom.h").read_text()
    assert custom.count("CUresult cuStreamQuery(") == 1
    assert "cuStreamQuery_ptsz" not in custom


def test_twins_forward_picks_the_variants_marshalling(gen):
    picker = stub((gen / "forward.h").read_text(), "inline CUresult cuStreamQuery")
    assert "DefaultStream::kPerThread ? forward::cuStreamQuery_ptsz(hStream)" in picker
    assert ": forward::cuStreamQuery(hStream)" in picker


def test_twins_need_a_custom_function_with_a_per_thread_variant(tmp_path):
    assert "not custom" in refusal(
        tmp_path, '[functions.cuStreamQuery]\nhandling = "forward"\ntwins = true\n')
    assert "no per-thread variant" in refusal(
        tmp_path, '[functions.cuCtxSynchronize_v2]\nhandling = "custom"\ntwins = true\n')


def refusal(tmp_path: Path, annotations: str) -> str:
    """What the generator says when it refuses `annotations`."""
    path = tmp_path / "refused.toml"
    path.write_text(annotations)
    result = generate(tmp_path, path)
    assert result.returncode != 0
    return result.stderr
