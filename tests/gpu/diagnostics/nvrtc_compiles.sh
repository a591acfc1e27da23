#!/usr/bin/env bash
# How long each NVRTC compile takes in one batch-8 GPT-2 generation
# (bench/apps/generate.py gpt2-b8), natively and through scuda: uprobes on
# nvrtcCompileProgram's entry (with its options) and return in the torch
# wheel's libnvrtc, recorded by perf; through scuda twice, from an empty
# compile cache and then from the one the first run filled. On the GPU
# host, from the repository root, with .deps and a perf bundle
# (perf_bundle.sh) carried:
#
#     PERF_DIR=.tools/perf bash tests/gpu/diagnostics/nvrtc_compiles.sh
#
# Prints each side's compile count, total and median time, and the first
# compiles' options; perf's text output goes to $OUT. Figures:
# docs/bench/generation.md.
set -u
out=${OUT:-/tmp/scuda-nvrtc}
mkdir -p "$out"
repo=$PWD
perf_dir=${PERF_DIR:-.tools/perf}
perf_bin=$repo/$perf_dir/perf
perf_lib=$repo/$perf_dir/lib
# perf's libraries go to perf alone, not to the program it watches.
perf() { LD_LIBRARY_PATH=$perf_lib "$perf_bin" "$@"; }
saved=${LD_LIBRARY_PATH:-}
# shellcheck source=tests/gpu/build.sh
source tests/gpu/build.sh >"$out/build.out" 2>&1
lib=$(find / -xdev -path '*site-packages/nvidia/*' -name 'libnvrtc.so.13' -type f 2>/dev/null | head -n 1)
echo "libnvrtc: $lib"
perf probe -d 'nvrtc*' >/dev/null 2>&1
# options is nvrtcCompileProgram's third argument (rdx): an array of strings.
args="n=%si:s32"
for j in $(seq 0 27); do args="$args o$j=+0(+$((8 * j))(%dx)):string"; done
perf probe -x "$lib" -a "nvrtc:compile=nvrtcCompileProgram $args" >"$out/probe.log" 2>&1
perf probe -x "$lib" -a "nvrtc:compile_ret=nvrtcCompileProgram%return r=\$retval" >>"$out/probe.log" 2>&1
cd bench/apps || exit 1
export HF_HUB_OFFLINE=1
# Whether NVIDIA's own compile cache already holds programs from earlier runs.
echo "native compute cache: $(du -sh "${CUDA_CACHE_PATH:-$HOME/.nv/ComputeCache}" 2>/dev/null || echo none)"
timeout 200 env LD_LIBRARY_PATH="$perf_lib" "$perf_bin" record -e 'nvrtc:*' -o /tmp/nvrtc-native.data \
  -- env LD_LIBRARY_PATH="$saved" python3 generate.py gpt2-b8 --repeats 1 >"$out/native_gen.txt" 2>&1
"$repo/build/bin/scuda" server -l 127.0.0.1:14998 >"$out/server.log" 2>&1 &
server=$!
sleep 2
# Twice through scuda from an empty client cache: the first run fills the
# compile cache NVRTC reaches through the driver's hidden table, the second
# finds its programs there, as a native run finds NVIDIA's cache.
export SCUDA_CACHE_DIR=/tmp/scuda-nvrtc-cache
rm -rf "$SCUDA_CACHE_DIR"
for side in scuda-cold scuda-warm; do
  timeout 240 env LD_LIBRARY_PATH="$perf_lib" "$perf_bin" record -e 'nvrtc:*' -o "/tmp/nvrtc-$side.data" \
    -- env LD_LIBRARY_PATH="$saved" "$repo/tests/gpu/isolate.sh" "$repo/build/bin/scuda" run \
    --server 127.0.0.1:14998 -- python3 generate.py gpt2-b8 --repeats 1 >"$out/${side}_gen.txt" 2>&1
done
# The server must end, or the device call that runs this never returns.
kill "$server" 2>/dev/null
wait "$server" 2>/dev/null
for side in native scuda-cold scuda-warm; do
  perf script -i "/tmp/nvrtc-$side.data" -F tid,time,event,trace >"$out/${side}_script.txt" 2>/dev/null
done
perf probe -d 'nvrtc*' >/dev/null 2>&1
python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
for side in ("native", "scuda-cold", "scuda-warm"):
    start, rows = {}, []
    for line in open(f"{out}/{side}_script.txt", errors="replace"):
        m = re.match(r"\s*(\d+)\s+([\d.]+):\s+(\S+):\s*(.*)", line)
        if not m:
            continue
        tid, t, event, rest = m.group(1), float(m.group(2)), m.group(3), m.group(4)
        if event.endswith(":compile"):
            start[tid] = (t, rest)
        elif "compile_ret" in event and tid in start:
            t0, options = start.pop(tid)
            rows.append((t - t0, options))
    times = sorted(r[0] for r in rows)
    median = times[len(times) // 2] * 1000 if times else 0
    print(f"{side}: {len(rows)} compiles, {sum(times):.2f} s in all, median {median:.0f} ms")
    for seconds, options in rows[:2]:
        print(f"  {seconds * 1000:.0f} ms: {options[:400]}")
PY
for side in native scuda-cold scuda-warm; do grep -h "^{" "$out/${side}_gen.txt"; done
