#!/usr/bin/env bash
# prepare.sh: run on the DEV machine (Debian 12, registry access) before the
# tree is sent to the GPU machine, which has no internet. Fills .deps/ with:
#   .deps/root/  CLI11, spdlog, fmt, toml++, nlohmann-json (dev packages + the runtime libraries
#                their CMake configs point at), and lz4 (lz4.h and liblz4.a,
#                which src/CMakeLists.txt links statically), xxhash.h (inlined),
#                unpacked with dpkg -x
#   .deps/whl/   the Python libclang wheel, same version as installed here,
#                and nvidia-nvml-dev (nvml.h), likewise
# run.sh uses .deps automatically when it exists.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
deps=$PWD/.deps

# wheel_holds WHEEL PATH: whether WHEEL has a file whose name contains PATH.
# The listing is read whole first: `grep -q` in a pipe stops reading at the
# first match, and under pipefail the lister's broken pipe fails the check.
wheel_holds() {
  local listing
  listing=$(python3 -m zipfile -l "$1") && grep -qF "$2" <<<"$listing"
}
rm -rf "$deps"
mkdir -p "$deps/deb" "$deps/root" "$deps/whl"

# libspdlog1.10 and libfmt9 hold the .so files that spdlog's and fmt's CMake
# target files check for, so find_package() fails without them.
(cd "$deps/deb" && apt-get download libcli11-dev libspdlog-dev libfmt-dev \
  libspdlog1.10 libfmt9 liblz4-dev libxxhash-dev libtomlplusplus-dev nlohmann-json3-dev)
for deb in "$deps"/deb/*.deb; do
  dpkg -x "$deb" "$deps/root"
done
rm -rf "$deps/root/usr/share/doc" "$deps/deb"

ver=$(python3 -m pip show libclang 2>/dev/null | awk '/^Version:/ {print $2}')
if [ -z "$ver" ]; then
  echo "prepare: the libclang Python package is not installed here" >&2
  exit 1
fi
# libclang wheels are tagged py2.py3-none-manylinux*, so any Python works.
python3 -m pip download -q --no-deps --only-binary=:all: \
  --python-version 3.12 --implementation cp \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux2010_x86_64 -d "$deps/whl" "libclang==$ver"

# nvml.h for the NVML stand-in, the same version the build here generated from.
nvml_ver=$(python3 -m pip show nvidia-nvml-dev 2>/dev/null | awk '/^Version:/ {print $2}')
if [ -z "$nvml_ver" ]; then
  echo "prepare: the nvidia-nvml-dev Python package is not installed here (scripts/setup.sh)" >&2
  exit 1
fi
python3 -m pip download -q --no-deps --only-binary=:all: \
  --python-version 3.12 --implementation cp \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$deps/whl" "nvidia-nvml-dev==$nvml_ver"
wheel_holds "$deps"/whl/nvidia_nvml_dev-"$nvml_ver"-*.whl 'include/nvml.h' ||
  { echo "prepare: the nvidia-nvml-dev wheel has no nvml.h" >&2; exit 1; }

# Verify: headers, CMake configs and a wheel that holds libclang.so.
for f in usr/include/CLI/CLI.hpp usr/include/spdlog/spdlog.h \
  usr/include/fmt/format.h usr/share/cmake/CLI11/CLI11Config.cmake \
  usr/lib/x86_64-linux-gnu/cmake/spdlog/spdlogConfig.cmake \
  usr/lib/x86_64-linux-gnu/cmake/fmt/fmt-config.cmake \
  usr/include/lz4.h usr/lib/x86_64-linux-gnu/liblz4.a; do
  [ -e "$deps/root/$f" ] || { echo "prepare: missing $f" >&2; exit 1; }
done
whl=$(ls "$deps"/whl/libclang-"$ver"-*.whl)
wheel_holds "$whl" 'clang/native/libclang.so' ||
  { echo "prepare: $whl has no libclang.so" >&2; exit 1; }

echo "prepare: wheel $(basename "$whl")"
echo "prepare: .deps is $(du -sh "$deps" | cut -f1) ($(du -sb "$deps" | cut -f1) bytes)"
