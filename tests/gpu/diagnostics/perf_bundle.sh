#!/usr/bin/env bash
# perf_bundle.sh [DIR]: packs this machine's perf and the libraries it needs
# (all but the C and C++ runtimes, which the GPU host has newer) into DIR
# (default .tools/perf), for a GPU host that has no perf. Carry DIR, then
# give the libraries to perf alone, not to the command it profiles:
#   LD_LIBRARY_PATH=DIR/lib DIR/perf record -F 999 -g -o FILE -- env -u LD_LIBRARY_PATH CMD
#   LD_LIBRARY_PATH=DIR/lib DIR/perf report -i FILE --no-children --stdio
set -euo pipefail
dir=${1:-.tools/perf}
perf=$(command -v perf) || { echo "perf_bundle.sh: no perf here (apt-get install linux-perf)" >&2; exit 1; }
mkdir -p "$dir/lib"
cp -L "$perf" "$dir/perf"
# ldd lines "name => /path (addr)": every library but the runtimes.
ldd "$perf" | awk '$3 ~ /^\// { print $3 }' |
  grep -Ev '/(libc|libm|libpthread|libdl|librt|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so' |
  while read -r lib; do cp -L "$lib" "$dir/lib/"; done
echo "perf_bundle.sh: $(du -sh "$dir" | cut -f1) in $dir"
