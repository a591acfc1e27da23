"""Runs codegen/generate.py with nvml.h and checks the NVML glue."""
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import pytest

from test_generate import CUDA_INCLUDE, GENERATOR, stub


def nvml_include() -> Path | None:
    try:
        files = importlib.metadata.files("nvidia-nvml-dev") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    return next((Path(f.locate()).parent for f in files if f.name == "nvml.h"), None)


NVML_INCLUDE = nvml_include()
pytestmark = pytest.mark.skipif(
    NVML_INCLUDE is None or not (CUDA_INCLUDE / "cuda.h").exists(),
    reason="needs the CUDA headers and nvidia-nvml-dev")


def generate(out: Path, *extra: str) -> None:
    cmd = [sys.executable, str(GENERATOR), "--cuda-include", str(CUDA_INCLUDE),
           "--out", str(out), *extra]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr


@pytest.fixture(scope="module")
def gen(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("nvml")
    generate(out, "--nvml-include", str(NVML_INCLUDE), "--nvml-coverage",
             str(out / "nvml-coverage.md"))
    return out


def test_ops_start_at_5000(gen):
    ops = re.findall(r"kOp_(\w+) = (\d+),", (gen / "nvml_ops.h").read_text())
    assert min(int(n) for _, n in ops) == 5000
    assert "nvmlInit_v2" in dict(ops)


def test_nvml_signatures_join_the_api_hash(gen, tmp_path):
    generate(tmp_path)
    def api_hash(d):
        return re.search(r"kApiHash = (\w+)", (d / "api_ops.h").read_text()).group(1)
    assert api_hash(gen) != api_hash(tmp_path)


def test_out_strings_travel_with_their_length(gen):
    body = stub((gen / "nvml_client_stubs.cc").read_text(), "nvmlDeviceGetName")
    assert "const size_t n_name = length;" in body
    assert "put_out_buf(w_, name, n_name);" in body


def test_nvml_handles_are_handle_kinds(gen):
    kinds = (gen / "handle_kinds.h").read_text()
    for h in ("nvmlDevice_t", "nvmlUnit_t", "nvmlEventSet_t", "nvmlGpuInstance_t"):
        assert f"  {h}," in kinds


def test_process_lists_have_ops_but_hand_written_handlers(gen):
    name = "nvmlDeviceGetComputeRunningProcesses_v3"
    assert f"kOp_{name} =" in (gen / "nvml_ops.h").read_text()
    assert f"h_{name}(" not in (gen / "nvml_server_handlers.cc").read_text()
    body = stub((gen / "nvml_client_stubs.cc").read_text(), name)
    assert "NVML_ERROR_INSUFFICIENT_SIZE" in body


def test_singular_arrays_beside_counts_need_annotations(gen):
    rows = (gen / "nvml-coverage.md").read_text()
    assert re.search(r"`nvmlDeviceGetVgpuMetadata` \| unsupported \|.*count pointer", rows)
    assert "| `nvmlDeviceGetSupportedMemoryClocks` | forwarded |" in rows


def test_unsupported_calls_say_so(gen):
    body = stub((gen / "nvml_client_stubs.cc").read_text(), "nvmlDeviceGetProcessUtilization")
    assert 'return unsupported("nvmlDeviceGetProcessUtilization");' in body


def test_cached_answers_are_kept_by_the_inputs_alone(gen):
    body = stub((gen / "nvml_client_stubs.cc").read_text(), "nvmlDeviceGetHandleByPciBusId_v2")
    assert "put_str(k_, pciBusId);" in body
    assert "k_.u8(device != nullptr);" in body  # not the proposed id
    assert "cached_call(scuda::protocol::kOp_nvmlDeviceGetHandleByPciBusId_v2, k_, w_, &reply_)" in body
    ops = dict(re.findall(r"kOp_(\w+) = (\d+),", (gen / "nvml_ops.h").read_text()))
    assert "nvmlDeviceGetHandleByPciBusId_v2" in ops
