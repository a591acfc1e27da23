"""Reads the GPU through pynvml (nvidia-ml-py), as PyTorch and monitoring
tools do. The RESULT line holds the facts that must be identical natively and
through scuda; the `readings` lines before it hold values that change."""
import json
import sys

try:
    import pynvml
except ImportError:
    print("RESULT read_nvml SKIP pynvml (nvidia-ml-py) is not installed")
    sys.exit(0)


def text(value):
    return value.decode() if isinstance(value, bytes) else value


def read(fn, *args):
    """A reading, or the NVML error it gave (some GPUs support fewer)."""
    try:
        return fn(*args)
    except pynvml.NVMLError as e:
        return f"error: {e}"


def device(index):
    h = pynvml.nvmlDeviceGetHandleByIndex(index)
    pci = pynvml.nvmlDeviceGetPciInfo(h)
    mem = pynvml.nvmlDeviceGetMemoryInfo(h)
    uuid = text(pynvml.nvmlDeviceGetUUID(h))
    by_bus = pynvml.nvmlDeviceGetHandleByPciBusId(pci.busId)
    util = read(pynvml.nvmlDeviceGetUtilizationRates, h)
    readings = {
        "memory_used": mem.used,
        "utilization_gpu": getattr(util, "gpu", util),
        "temperature": read(pynvml.nvmlDeviceGetTemperature, h, pynvml.NVML_TEMPERATURE_GPU),
        "power_mw": read(pynvml.nvmlDeviceGetPowerUsage, h),
        "sm_clock": read(pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_SM),
        "mem_clock": read(pynvml.nvmlDeviceGetClockInfo, h, pynvml.NVML_CLOCK_MEM),
        "processes": [p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)],
    }
    print("readings", index, json.dumps(readings))
    return {
        "name": text(pynvml.nvmlDeviceGetName(h)),
        "uuid": uuid,
        "uuid_by_bus_id": text(pynvml.nvmlDeviceGetUUID(by_bus)),
        "bus_id": text(pci.busId),
        "memory_total": mem.total,
        "compute_mode": pynvml.nvmlDeviceGetComputeMode(h),
    }


def main():
    pynvml.nvmlInit()
    facts = {
        "driver": text(pynvml.nvmlSystemGetDriverVersion()),
        "cuda_driver": pynvml.nvmlSystemGetCudaDriverVersion_v2(),
        "devices": [device(i) for i in range(pynvml.nvmlDeviceGetCount())],
    }
    pynvml.nvmlShutdown()
    print("RESULT read_nvml", json.dumps(facts, sort_keys=True))


if __name__ == "__main__":
    main()
