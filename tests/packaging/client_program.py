"""A CUDA and NVML client with nothing but Python: the driver's and NVML's
entry points through ctypes, as a program run by `scuda run` calls them.
Prints one line per library, with the file the library was loaded from, so
that a test sees which stand-in answered."""

import ctypes


def loaded_from(name: str) -> str:
    with open("/proc/self/maps") as maps:
        return next(line.split()[-1] for line in maps if name in line)


def check(what: str, rc: int) -> None:
    if rc != 0:
        raise SystemExit(f"{what} failed: {rc}")


def cuda_line() -> str:
    cuda = ctypes.CDLL("libcuda.so.1")
    check("cuInit", cuda.cuInit(0))
    count, device = ctypes.c_int(), ctypes.c_int()
    check("cuDeviceGetCount", cuda.cuDeviceGetCount(ctypes.byref(count)))
    check("cuDeviceGet", cuda.cuDeviceGet(ctypes.byref(device), 0))
    name = ctypes.create_string_buffer(256)
    check("cuDeviceGetName", cuda.cuDeviceGetName(name, 256, device))
    return (f"cuda: {count.value} devices, device 0 {name.value.decode()}, "
            f"from {loaded_from('libcuda.so.1')}")


def nvml_line() -> str:
    nvml = ctypes.CDLL("libnvidia-ml.so.1")
    check("nvmlInit_v2", nvml.nvmlInit_v2())
    count = ctypes.c_uint()
    check("nvmlDeviceGetCount_v2", nvml.nvmlDeviceGetCount_v2(ctypes.byref(count)))
    check("nvmlShutdown", nvml.nvmlShutdown())
    return f"nvml: {count.value} devices, from {loaded_from('libnvidia-ml.so.1')}"


if __name__ == "__main__":
    print(cuda_line(), flush=True)
    print(nvml_line(), flush=True)
