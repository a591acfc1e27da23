#!/usr/bin/env bash
# Installs what building and testing scuda needs, from Debian's packages and
# PyPI. Needs root (or sudo) for apt-get; skips what is already there.
set -euo pipefail
packages=(cmake ninja-build g++ python3 python3-pip libcli11-dev libspdlog-dev libfmt-dev
          libgtest-dev libssl-dev liblz4-dev libxxhash-dev clang shellcheck nlohmann-json3-dev prometheus
          libtomlplusplus-dev python3-venv dpkg-dev systemd file clang-format clang-tidy lld
          libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev python3-yaml)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=$([ "$(id -u)" -eq 0 ] || echo sudo)
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
fi
# Slurm's daemons and commands, for tests/packaging/slurm_test.sh, without the
# plugins they recommend (HDF5, ROCm SMI, InfluxDB, ...), which it needs none of.
slurm=(slurmctld slurmd slurm-client)
if ! dpkg -s "${slurm[@]}" >/dev/null 2>&1; then
  sudo=$([ "$(id -u)" -eq 0 ] || echo sudo)
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${slurm[@]}"
fi
# libFuzzer's runtime, for scripts/fuzz.sh: in the clang version's own package.
if ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, long) { return 0; }' |
    clang++ -x c++ -fsanitize=fuzzer -o /dev/null - 2>/dev/null; then
  sudo=$([ "$(id -u)" -eq 0 ] || echo sudo)
  major=$(clang++ -dumpversion | cut -d. -f1)
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "libclang-rt-$major-dev"
fi
python3 -c "import clang.cindex, pytest" 2>/dev/null ||
  python3 -m pip install -q libclang pytest ||
  python3 -m pip install -q --break-system-packages libclang pytest
# nvml.h, for the NVML stand-in (CMake finds it through the package), of the
# version the wheel's build pins in pyproject.toml: client and server must be
# generated from the same header.
nvml=$(grep -o 'nvidia-nvml-dev==[0-9.]*' "$(dirname "$0")/../pyproject.toml")
python3 -c "import importlib.metadata as m; assert m.version('nvidia-nvml-dev') == '${nvml#*==}'" \
    2>/dev/null ||
  python3 -m pip install -q "$nvml" ||
  python3 -m pip install -q --break-system-packages "$nvml"
cuda_home=${CUDA_HOME:-/usr/local/cuda}
if [ ! -f "$cuda_home/include/cuda.h" ]; then
  echo "setup: no cuda.h under $cuda_home/include; install the CUDA 13 toolkit headers or set CUDA_HOME" >&2
  exit 1
fi
