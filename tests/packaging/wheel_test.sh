#!/usr/bin/env bash
# The wheel as a user gets it: installed into a fresh virtual environment
# with no CUDA toolkit in sight, its `scuda run` runs a Python program whose
# driver and NVML calls reach a server of this build tree on loopback (with
# the test doubles), through the wheel's own client libraries.
# Usage: wheel_test.sh PACKAGES_DIR SCUDA_BIN DRIVER_DOUBLE NVML_DOUBLE
set -euo pipefail
packages=$1 scuda_bin=$2 driver_double=$3 nvml_double=$4
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/packaging/loopback_server.sh
source "$here/loopback_server.sh"
work=$(mktemp -d)
trap 'stop_server; rm -rf "$work"' EXIT

wheels=("$packages"/scuda-*.whl)
[ -f "${wheels[0]}" ] || { echo "no wheel in $packages (scripts/package.sh makes it)" >&2; exit 1; }
echo "wheel: ${wheels[0]##*/} ($(du -h "${wheels[0]}" | cut -f1))"
# pip installs it on any machine of glibc 2.35 or newer.
if [[ ${wheels[0]##*/} != *-py3-none-manylinux_2_35_x86_64.whl ]]; then
  echo "the wheel is not tagged manylinux_2_35_x86_64 (scripts/package.sh retags it)" >&2
  exit 1
fi

# A fresh environment, nothing from the network: the wheel needs no other
# package.
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install -q --no-index --no-deps "${wheels[0]}"
package_dir=$("$work/venv/bin/python" -c 'import scuda; print(scuda.PACKAGE_DIR)')
ls -l "$package_dir/bin" "$package_dir/lib"

# The client library's size is the release build's promise.
size=$(stat -c %s "$package_dir/lib/libcuda.so.1")
if ((size >= 10 * 1024 * 1024)); then
  echo "libcuda.so.1 in the wheel is $size bytes, not under 10 MiB" >&2
  exit 1
fi

# Nothing but glibc (and the wheel's own libcuda.so.1) at run time, so the
# wheel runs on machines without the build's libraries.
for binary in "$package_dir"/bin/scuda "$package_dir"/lib/*.so.1; do
  extra=$(readelf -d "$binary" | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' |
    grep -vxE 'libc\.so\.6|libm\.so\.6|ld-linux-x86-64\.so\.2|libcuda\.so\.1' || true)
  if [ -n "$extra" ]; then
    echo "${binary##*/} needs libraries a wheel cannot count on: $extra" >&2
    exit 1
  fi
done

"$work/venv/bin/scuda" --version
start_server "$scuda_bin" "$driver_double" "$nvml_double"
# PATH without the build tree or a toolkit: only the venv's command.
output=$(env -i HOME="$work" PATH="$work/venv/bin:/usr/bin:/bin" SCUDA_ANSWER_CACHE=off \
  scuda run --server "$SERVER_ADDRESS" -- python "$here/client_program.py")
echo "$output"
grep -q "^cuda: [1-9][0-9]* devices, .* from $package_dir/lib/libcuda.so.1$" <<<"$output"
grep -q "^nvml: [1-9][0-9]* devices, from $package_dir/lib/libnvidia-ml.so.1$" <<<"$output"
echo "wheel_test: the wheel's scuda run reached the server"
