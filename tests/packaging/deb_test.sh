#!/usr/bin/env bash
# The scuda-client, scuda-server and scuda-device-plugin .deb packages
# (the last where the build found gRPC): installed with dpkg when
# this runs as root (CI's throwaway machine), else unpacked with dpkg-deb
# into a folder standing in for /. Then the installed scuda says its
# version, serves on loopback with the test doubles, and its `scuda run`
# runs a Python client through the installed client libraries; the
# installed device plugin answers --help.
# Usage: deb_test.sh PACKAGES_DIR DRIVER_DOUBLE NVML_DOUBLE
set -euo pipefail
packages=$1 driver_double=$2 nvml_double=$3
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=tests/packaging/loopback_server.sh
source "$here/loopback_server.sh"
work=$(mktemp -d)
installed=false
cleanup() {
  stop_server
  if $installed; then dpkg --purge scuda-device-plugin scuda-server scuda-client >/dev/null; fi
  rm -rf "$work"
}
trap cleanup EXIT

debs=("$packages"/scuda-client_*.deb "$packages"/scuda-server_*.deb)
plugin=$(compgen -G "$packages/scuda-device-plugin_*.deb" || true)
if [ -n "$plugin" ]; then
  debs+=("$plugin")
else
  echo "deb_test: no scuda-device-plugin package (the release build found no gRPC): not tested"
fi
for deb in "${debs[@]}"; do
  [ -f "$deb" ] || { echo "no $deb (scripts/package.sh makes it)" >&2; exit 1; }
  dpkg-deb --info "$deb" | sed -n 's/^ \(Package\|Version\|Depends\|Installed-Size\):/  &/p'
  # Installed-Size counts as dpkg-gencontrol does: each file's KiB rounded
  # up, 1 for each folder or link (not the size of what a link points to).
  said=$(dpkg-deb -f "$deb" Installed-Size)
  files=$(dpkg-deb -c "$deb" | awk '{ s += $1 ~ /^-/ ? int(($3 + 1023) / 1024) : 1 } END { print s }')
  if [ "$said" != "$files" ]; then
    echo "${deb##*/} says Installed-Size $said KiB, but its files take $files KiB" >&2
    exit 1
  fi
done

if [ "$(id -u)" -eq 0 ] && [ "${SCUDA_DEB_TEST_UNPACK:-0}" != 1 ]; then
  root=
  dpkg -i "${debs[@]}"
  installed=true
else
  echo "deb_test: not root (or SCUDA_DEB_TEST_UNPACK=1): unpacking into a folder, not installing"
  root=$work/root
  for deb in "${debs[@]}"; do dpkg-deb -x "$deb" "$root"; done
fi

scuda=$root/usr/bin/scuda
for path in "$scuda" "$root/usr/lib/scuda/lib/libcuda.so.1" "$root/usr/lib/scuda/lib/libscuda.so" \
    "$root/usr/lib/scuda/lib/libnvidia-ml.so.1" "$root/usr/lib/systemd/system/scuda-server.service" \
    "$root/etc/default/scuda-server" "$root/usr/lib/scuda/slurm/scuda-slurm"; do
  [ -e "$path" ] || { echo "the packages did not install $path" >&2; exit 1; }
done
"$scuda" --version
start_server "$scuda" "$driver_double" "$nvml_double"
output=$(env -i HOME="$work" PATH=/usr/bin:/bin SCUDA_ANSWER_CACHE=off \
  "$scuda" run --server "$SERVER_ADDRESS" -- python3 "$here/client_program.py")
echo "$output"
lib=$(realpath "$root/usr/lib/scuda/lib")
grep -q "^cuda: [1-9][0-9]* devices, .* from $lib/libcuda.so.1$" <<<"$output"
grep -q "^nvml: [1-9][0-9]* devices, from $lib/libnvidia-ml.so.1$" <<<"$output"
echo "deb_test: the installed scuda served and ran a client"
if [ -n "$plugin" ]; then
  help=$("$root/usr/bin/scuda-device-plugin" --help)
  grep -q -- "--pool" <<<"$help" ||
    { echo "the installed scuda-device-plugin does not answer --help" >&2; exit 1; }
  echo "deb_test: the installed scuda-device-plugin answers --help"
fi
# Every binary the packages ship is stripped of its debug info, which stays
# in the build tree's .debug file that .gnu_debuglink names.
shipped=("$scuda" "$root/usr/lib/scuda/lib/libcuda.so.1" "$root/usr/lib/scuda/lib/libnvidia-ml.so.1")
[ -z "$plugin" ] || shipped+=("$root/usr/bin/scuda-device-plugin")
for binary in "${shipped[@]}"; do
  sections=$(readelf -S --wide "$(realpath "$binary")")
  if grep -q '\.debug_info' <<<"$sections" || ! grep -q '\.gnu_debuglink' <<<"$sections"; then
    echo "$binary is not stripped with its debug info split off" >&2
    exit 1
  fi
done
echo "deb_test: ${#shipped[@]} shipped binaries stripped, each naming its .debug file"
